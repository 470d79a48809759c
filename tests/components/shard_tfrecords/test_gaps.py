"""Tables with gaps, Unicode strings, quoted commas, ``nan`` text and tiny splits."""

import numpy as np
import pytest

from conftest import MESSY_HEADER, messy_rows, write_csv, write_messy_csv
from tfkfp.cli.main import main
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.errors import ShardInputError


def read_all(out):
    """Every row of both splits as {column: array}, ordered by id."""
    from tfkfp.components.common.data.reader import make_dataset

    parts = {}
    for split in ("train", "eval"):
        for features, keys in make_dataset(out, mode="predict", split=split, batch_size=128):
            for name, value in {**features, **keys}.items():
                parts.setdefault(name, []).append(value.numpy())
    rows = {k: np.concatenate(v) for k, v in parts.items()}
    order = np.argsort(rows["id"])
    return {k: v[order] for k, v in rows.items()}


def test_gaps_are_kept_counted_and_stored_as_nan_or_empty_strings(messy_csv, tmp_path):
    path, rows = messy_csv
    result = shard_tfrecords(path, str(tmp_path / "ds"), label="label", keys=["id"])
    schema = Schema.load(str(tmp_path / "ds"))
    column = {name: [r[i] for r in rows] for i, name in enumerate(MESSY_HEADER)}
    expected = {"x": column["x"].count(""), "y": column["y"].count("nan"),
                "colour": column["colour"].count(""), "count": column["count"].count("")}
    assert {c.name: c.missing for c in schema.columns if c.missing} == expected
    assert schema.column("count").dtype == "float32"  # whole numbers with blanks
    assert result.metadata()["schema"]["missing"] == expected
    assert "| colour | feature | string | [] | 55 |" in result.markdown()
    data = read_all(str(tmp_path / "ds"))
    assert len(data["id"]) == len(rows)
    np.testing.assert_array_equal(np.isnan(data["x"]), [v == "" for v in column["x"]])
    np.testing.assert_array_equal(np.isnan(data["y"]), [v == "nan" for v in column["y"]])
    assert [v.decode() for v in data["colour"]] == column["colour"]


def test_missing_error_refuses_the_first_gap_naming_line_and_column(messy_csv, tmp_path):
    with pytest.raises(ShardInputError, match=r"messy\.csv, line 4, column 'count': missing "
                       r"value \(blank, null or NaN\); expected float32 \(missing='impute'"):
        shard_tfrecords(messy_csv[0], str(tmp_path / "ds"), label="label", missing="error")
    assert not (tmp_path / "ds" / "manifest.json").exists()
    with pytest.raises(ShardInputError, match=r"missing 'skip' is not one of"):
        shard_tfrecords(messy_csv[0], str(tmp_path / "ds"), label="label", missing="skip")


def test_a_blank_label_is_refused_naming_its_line(tmp_path):
    rows = messy_rows(40)
    rows[30][-1] = ""
    with pytest.raises(ShardInputError, match=r"line 32, column 'label': missing label"):
        shard_tfrecords(write_messy_csv(tmp_path / "m.csv", rows), str(tmp_path / "ds"),
                        label="label")


def test_whole_numbers_with_a_late_blank_say_which_column_type_to_set(tmp_path):
    rows = [[i, i % 5, i % 2] for i in range(1500)]
    rows[1400][1] = ""  # beyond the rows that column types are inferred from
    path = write_csv(tmp_path / "late.csv", ["id", "n", "label"], rows)
    with pytest.raises(ShardInputError, match=r"line 1402, column 'n': missing value; expected "
                       r'int64, which cannot hold a gap \(set column_types \{"n": "float32"\}'):
        shard_tfrecords(path, str(tmp_path / "ds"), label="label")
    shard_tfrecords(path, str(tmp_path / "ds"), label="label", column_types={"n": "float32"})
    assert Schema.load(str(tmp_path / "ds")).column("n").missing == 1


def test_gaps_in_json_lines_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = ['{"x": 1.5, "c": "a", "label": 0}', '{"x": null, "c": null, "label": 1}',
             '{"x": NaN, "c": "b", "label": 0}']
    (tmp_path / "g.jsonl").write_text("\n".join(lines) * 4 + "\n")
    shard_tfrecords(str(tmp_path / "g.jsonl"), str(tmp_path / "j"), label="label")
    schema = Schema.load(str(tmp_path / "j"))
    assert (schema.column("x").missing, schema.column("c").missing) == (8, 4)
    pq.write_table(pa.table({"x": [1.0, None, float("nan")], "label": [0, 1, 0]}),
                   tmp_path / "g.parquet")
    shard_tfrecords(str(tmp_path / "g.parquet"), str(tmp_path / "p"), label="label")
    assert Schema.load(str(tmp_path / "p")).column("x").missing == 2


def test_a_three_row_file_warns_that_its_splits_are_too_small(tmp_path, caplog):
    path = write_csv(tmp_path / "three.csv", ["id", "x", "label"],
                     [[1, 0.5, "a"], [2, 1.5, "b"], [3, 2.5, "a"]])
    result = shard_tfrecords(path, str(tmp_path / "ds"), label="label", keys=["id"])
    assert result.total_records == 3
    assert any("the eval split has no records" in w and "eval_fraction" in w
               for w in result.warnings)
    assert any("only" in w and "too few to measure" in w for w in result.warnings)
    assert "**Warning:** the eval split has no records" in result.markdown()
    assert "the eval split has no records" in caplog.text


def test_a_label_with_one_class_warns_naming_it_and_its_value(tmp_path, caplog):
    path = write_csv(tmp_path / "one.csv", ["x", "label"], [[i * 0.5, "yes"] for i in range(30)])
    result = shard_tfrecords(path, str(tmp_path / "ds"), label="label")
    want = "the label 'label' has one class only, 'yes': train refuses it"
    assert [w for w in result.warnings if want in w] and want in caplog.text
    assert f"**Warning:** {want}" in result.markdown()


def test_shard_command_takes_missing_and_prints_the_gap_counts(messy_csv, tmp_path, capsys):
    assert main(["shard", messy_csv[0], str(tmp_path / "ds"), "--label", "label",
                 "--keys", "id"]) == 0
    assert "| x | feature | float32 | [] | 67 |" in capsys.readouterr().out
    assert main(["shard", messy_csv[0], str(tmp_path / "ds2"), "--label", "label",
                 "--missing", "error"]) == 1
    assert "missing value (blank, null or NaN)" in capsys.readouterr().err
