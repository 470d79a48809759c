"""Each kind of bad input gets an error naming where and what, and leaves no output."""

import os

import pytest

from conftest import write_csv
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.errors import ShardInputError


def fails(tmp_path, source, match, **options):
    out = tmp_path / "out"
    options.setdefault("label", "label")
    with pytest.raises(ShardInputError, match=match):
        shard_tfrecords(str(source), str(out), **options)
    assert not out.exists() or os.listdir(out) == []


def test_missing_path(tmp_path):
    fails(tmp_path, tmp_path / "nope.csv", r"nope\.csv does not exist")


def test_empty_glob(tmp_path):
    fails(tmp_path, tmp_path / "*.csv", r"no files match the pattern .*\*\.csv")


def test_header_only_csv(tmp_path):
    fails(tmp_path, write_csv(tmp_path / "h.csv", ["x", "label"], []),
          r"h\.csv has a header but no data rows")


def test_ragged_row(tmp_path):
    path = write_csv(tmp_path / "r.csv", ["x", "y", "label"], [[1, 2, 0], [3, 4, 1], [5, 1]])
    fails(tmp_path, path, r"r\.csv, line 4: ragged row: found 2 fields, expected 3")


def test_text_in_numeric_column(tmp_path):
    rows = [[i, i * 0.5, i % 2] for i in range(20)] + [[20, "abc", 0]]
    path = write_csv(tmp_path / "t.csv", ["id", "x", "label"], rows)
    fails(tmp_path, path, r"t\.csv, line 22, column 'x': found 'abc', expected float32")


def test_float_in_a_column_inferred_as_int_says_how_to_fix_it(tmp_path):
    path = write_csv(tmp_path / "i.csv", ["x", "label"], [[1, 0], [2, 1], [2.5, 0]])
    fails(tmp_path, path, r"line 4, column 'x': found '2.5', expected int64.*column_types",
          column_types={"x": "int64"})


def test_missing_value_under_missing_error(tmp_path):
    path = write_csv(tmp_path / "m.csv", ["x", "label"], [[1.5, 0], ["", 1]])
    fails(tmp_path, path, r"m\.csv, line 3, column 'x': missing value \(blank, null or NaN\); "
          "expected float32", missing="error")


@pytest.mark.parametrize("value,found", [("inf", "inf"), ("-inf", "-inf"), ("1e39", "1e39"),
                                         ("3.5e38", "3.5e38"), ("-3.5e38", "-3.5e38")])
def test_non_finite_number_names_line_and_column(tmp_path, value, found):
    """A number past float32's range is read as inf: refused like inf, quoted as written."""
    rows = [[i, i * 0.5, i % 2] for i in range(30)]
    rows[17][1] = value
    path = write_csv(tmp_path / "f.csv", ["id", "x", "label"], rows)
    fails(tmp_path, path, rf"f\.csv, line 19, column 'x': found {found}, expected a finite "
          r"float32 within ±3\.4028235e\+38")


def test_the_largest_float32_is_a_value(tmp_path):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    rows = [[i, "3.4028235e38" if i == 3 else i * 0.5, i % 2] for i in range(30)]
    path = write_csv(tmp_path / "m.csv", ["id", "x", "label"], rows)
    assert shard_tfrecords(str(path), str(tmp_path / "out"), label="label").total_records == 30


def test_non_finite_number_in_jsonl_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = [f'{{"x": {1.5 if i != 4 else "Infinity"}, "label": {i % 2}}}' for i in range(6)]
    (tmp_path / "f.jsonl").write_text("\n".join(lines) + "\n")
    fails(tmp_path, tmp_path / "f.jsonl", r"f\.jsonl, line 5, column 'x': found inf")
    (tmp_path / "f.jsonl").write_text("\n".join(lines).replace("Infinity", "3.5e38") + "\n")
    fails(tmp_path, tmp_path / "f.jsonl", r"f\.jsonl, line 5, column 'x': found 3\.5e\+38, "
          "expected a finite float32")
    (tmp_path / "f.jsonl").write_text("\n".join(lines).replace("Infinity", "1e400") + "\n")
    fails(tmp_path, tmp_path / "f.jsonl", r"f\.jsonl, line 5, field 'x': found inf, expected "
          "a finite float32")  # past a double: pyarrow fails, the diagnosis names it
    table = pa.table({"x": [1.0, float("nan"), float("-inf")], "label": [0, 1, 0]})
    pq.write_table(table, tmp_path / "f.parquet")
    fails(tmp_path, tmp_path / "f.parquet", r"f\.parquet, row group 0, row 3, column 'x': "
          "found -inf, expected a finite float32")
    pq.write_table(table.slice(0, 2), tmp_path / "n.parquet")
    fails(tmp_path, tmp_path / "n.parquet", r"n\.parquet, row group 0, row 2, column 'x': "
          r"missing value \(blank, null or NaN\)", missing="error")


def test_unknown_label_column(tmp_path):
    path = write_csv(tmp_path / "u.csv", ["x", "y"], [[1, 2]])
    fails(tmp_path, path, r"label column 'target' is not in .*u\.csv; its columns are "
          r"\['x', 'y'\]", label="target")


def test_unknown_key_column(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["x", "label"], [[1, 2]])
    fails(tmp_path, path, r"key column 'id' is not in", keys=["id"])


def test_corrupt_image(tmp_path):
    folder = tmp_path / "imgs"
    (folder / "cat").mkdir(parents=True)
    from PIL import Image

    Image.new("RGB", (4, 4)).save(folder / "cat" / "good.png")
    blob = (folder / "cat" / "good.png").read_bytes()
    (folder / "cat" / "bad.png").write_bytes(blob[: len(blob) // 2])
    fails(tmp_path, folder, r"bad\.png is not a readable image")


def test_mixed_schemas_across_files(tmp_path):
    write_csv(tmp_path / "a.csv", ["x", "label"], [[1, 0]])
    write_csv(tmp_path / "b.csv", ["x", "z", "label"], [[1, 2, 0]])
    fails(tmp_path, tmp_path / "*.csv",
          r"mixed schemas: .*b\.csv has columns \['x', 'z', 'label'\] but .*a\.csv has")


def test_a_header_naming_a_column_twice_is_refused_naming_it(tmp_path):
    path = write_csv(tmp_path / "d.csv", ["x", "a", "a", "label"], [[1, 2, 3, 0]])
    fails(tmp_path, path, r"d\.csv names column 'a' twice \(columns 2 and 3\)")


def test_names_with_spaces_are_kept_whole_in_every_file(tmp_path):
    header = [" padded ", "mean radius", "label"]
    rows = [[i * 0.5, i, i % 2] for i in range(30)]
    write_csv(tmp_path / "a.csv", header, rows)
    write_csv(tmp_path / "b.csv", header, rows)
    result = shard_tfrecords(str(tmp_path / "*.csv"), str(tmp_path / "out"), label="label")
    assert [c.name for c in result.schema.columns] == header


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_ratio_outside_0_1(tmp_path, fraction):
    path = write_csv(tmp_path / "f.csv", ["x", "label"], [[1, 0]])
    fails(tmp_path, path, r"eval_fraction .* is outside \(0, 1\)", eval_fraction=fraction)


def test_shard_count_below_one(tmp_path):
    path = write_csv(tmp_path / "c.csv", ["x", "label"], [[1, 0]])
    fails(tmp_path, path, r"min_shards 0 is below 1", min_shards=0)
    fails(tmp_path, path, r"num_shards -1", num_shards=-1)


def test_bad_split_column_value(tmp_path):
    path = write_csv(tmp_path / "s.csv", ["x", "fold", "label"], [[1, "train", 0],
                                                                  [2, "holdout", 1]])
    fails(tmp_path, path, r"split column 'fold': found 'holdout', expected one of train",
          split_column="fold")


def test_unknown_compression_and_format(tmp_path):
    path = write_csv(tmp_path / "c.csv", ["x", "label"], [[1, 0]])
    fails(tmp_path, path, r"compression 'zip' is not one of", compression="zip")
    fails(tmp_path, path, r"input_format 'xls' is not one of", input_format="xls")


def test_invalid_json_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"x": 1, "label": 0}\n{"x": 2, "label": 1}\n{"x": oops}\n')
    fails(tmp_path, path, r"j\.jsonl, line 3: not valid JSON")


@pytest.mark.parametrize("first, where, kind", [
    (b"\x89PNG\r\n\x1a\n", "column 1: found byte 0x89", "a PNG image"),
    (b"\x1f\x8b\x08\x00", "column 2: found byte 0x8b", "gzip-compressed data")])
def test_a_binary_file_matched_by_a_csv_pattern_is_named_with_line_and_column(
        tmp_path, first, where, kind):
    """It used to fail with ``UnicodeDecodeError ... in position 0``, naming no file."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_csv(folder / "a.csv", ["x", "label"], [[i, i % 2] for i in range(20)])
    (folder / "b.csv").write_bytes(first + bytes(range(256)))
    fails(tmp_path, folder / "*.csv", rf"{folder}/b\.csv, line 1, {where}, which is not "
          rf"UTF-8 text; the file starts like {kind}")


def test_a_byte_that_is_not_utf8_in_a_csv_body_is_named_by_line_and_column(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"x,name,label\n1,ok,0\n2,ok,1\n3,caf\xe9,0\n")
    fails(tmp_path, path, r"latin\.csv, line 4, column 6: found byte 0xe9, which is not "
          r"UTF-8 text; save the file as UTF-8")


def test_a_dataset_written_into_its_input_folder_is_refused_saying_so(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write_csv(folder / "a.csv", ["x", "label"], [[i, i % 2] for i in range(40)])
    with pytest.raises(ShardInputError, match=rf"dataset {folder}/out is inside the input "
                       rf"folder {folder}: the next run would read that Dataset as input"):
        shard_tfrecords(str(folder), str(folder / "out"), label="label")
    assert not (folder / "out").exists()
    shard_tfrecords(str(folder / "*.csv"), str(folder / "out"), label="label")  # a pattern


def test_a_rerun_over_a_folder_holding_an_earlier_dataset_says_what_is_wrong(tmp_path):
    """It used to say the folder "has class subfolders but no images"."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_csv(folder / "a.csv", ["x", "label"], [[i, i % 2] for i in range(40)])
    shard_tfrecords(str(folder / "*.csv"), str(folder / "out"), label="label")
    fails(tmp_path, folder, rf"input folder {folder} was read as an image folder because of "
          rf"its subfolders \['out'\], but {folder}/out is a Dataset \(it holds manifest.json\) "
          "that an earlier run wrote into the input folder, not a class of images")
