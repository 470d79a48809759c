"""shard_tfrecords' ``layout``: every dtype round-trips through every layout, gaps included,
and merged fan-out parts keep their layout."""

import json

import numpy as np
import pytest
import tensorflow as tf

from conftest import write_csv
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.merge_datasets.core import merge_datasets
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.options import ShardOptions

HEADER = ["id", "f", "g", "i", "j", "s", "label"]


def rows(count=120):
    out = []
    for k in range(count):
        out.append([k, "" if k % 6 == 1 else k * 0.5 - 7, round(k / 3, 3), k * 1_000_003 - 9,
                    -k, "" if k % 5 == 2 else f"s{k % 4}", "yes" if k % 3 else "no"])
    return out


def read_all(dataset):
    """Every row of both splits as ``{column: values}``, in id order."""
    parts = []
    for split in ("train", "eval"):
        for features, keys in make_dataset(dataset, mode="predict", split=split,
                                           batch_size=32):
            parts.append({**{k: v.numpy() for k, v in features.items()},
                          **{k: v.numpy() for k, v in keys.items()}})
    table = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    order = np.argsort(table["id"])
    return {name: values[order] for name, values in table.items()}


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    return write_csv(tmp_path_factory.mktemp("layout") / "t.csv", HEADER, rows())


@pytest.mark.parametrize("layout", ["columns", "packed", "blocks"])
def test_every_dtype_round_trips_in_every_layout(csv_file, tmp_path, layout):
    out = str(tmp_path / layout)
    shard_tfrecords(csv_file, out, label="label", keys=["id"], num_shards=2, layout=layout,
                    column_types={"i": "int64", "j": "int64"}, block_rows=7)
    schema = Schema.load(out)
    assert schema.layout == layout and schema.block_rows == (7 if layout == "blocks" else 0)
    if layout != "columns":
        assert [(g.dtype, g.columns) for g in schema.packed] == [
            ("float32", ("f", "g")), ("int64", ("i", "j"))]
    assert schema.column("f").missing == 20 and schema.column("s").missing == 24
    table = read_all(out)
    expected = rows()
    np.testing.assert_array_equal(table["id"], np.arange(120))
    np.testing.assert_array_equal(
        table["f"], np.array([np.nan if r[1] == "" else r[1] for r in expected], np.float32))
    np.testing.assert_array_equal(table["g"], np.array([r[2] for r in expected], np.float32))
    assert table["i"].tolist() == [r[3] for r in expected] and table["i"].dtype == np.int64
    assert table["j"].tolist() == [r[4] for r in expected]
    assert [v.decode() for v in table["s"]] == [r[5] for r in expected]


def test_a_blocks_manifest_counts_rows_and_blocks(csv_file, tmp_path):
    out = tmp_path / "blocks"
    result = shard_tfrecords(csv_file, str(out), label="label", num_shards=3, layout="blocks",
                             block_rows=16)
    manifest = json.loads((out / "manifest.json").read_text())
    for split, body in manifest["splits"].items():
        assert body["records"] == result.records[split]
        for shard in body["shards"]:
            records = list(tf.data.TFRecordDataset(str(out / shard["file"])))
            rows = sum(len(tf.train.Example.FromString(r.numpy()).features.feature["label"]
                           .bytes_list.value) for r in records)
            assert shard["blocks"] == len(records) and shard["records"] == rows
            assert len(records) == -(-rows // 16)  # several rows a record
    assert sum(result.records.values()) == 120
    assert "compression: none, layout: blocks (16 rows per record)." in result.markdown()


def test_the_writing_meter_counts_rows_in_blocks(csv_file, tmp_path, caplog):
    """What a run's summary divides into a rate: rows, as the manifest counts them."""
    import logging

    with caplog.at_level(logging.INFO):
        shard_tfrecords(csv_file, str(tmp_path / "blocks"), label="label", num_shards=2,
                        layout="blocks", block_rows=16)
    lines = [r.getMessage() for r in caplog.records if "writing shards" in r.getMessage()]
    assert lines and lines[-1].startswith("writing shards: 120/120 records")


def test_a_rerun_in_blocks_gives_the_same_rows(csv_file, tmp_path):
    out = str(tmp_path / "blocks")
    for _ in range(2):
        shard_tfrecords(csv_file, out, label="label", keys=["id"], num_shards=2,
                        layout="blocks", block_rows=5)
        table = read_all(out)
        np.testing.assert_array_equal(table["id"], np.arange(120))


def test_merged_parts_keep_the_packed_layout(csv_file, tmp_path):
    parts = [str(tmp_path / f"part{k}") for k in range(2)]
    for part in parts:  # two parts of one table, as a fan-out's tasks write them
        shard_tfrecords(csv_file, part, label="label", keys=["id"], num_shards=1)
    merged = merge_datasets(parts, str(tmp_path / "merged"))
    assert merged.schema.layout == "packed" and merged.schema.packed
    assert Schema.load(str(tmp_path / "merged")) == merged.schema
    assert len(read_all(str(tmp_path / "merged"))["id"]) == 240


def test_parts_of_different_layouts_are_not_merged(csv_file, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shard_tfrecords(csv_file, a, label="label", num_shards=1, layout="packed")
    shard_tfrecords(csv_file, b, label="label", num_shards=1, layout="columns")
    with pytest.raises(ValueError, match="only Datasets of one table can be merged"):
        merge_datasets([a, b], str(tmp_path / "merged"))


def test_parts_of_other_block_rows_are_not_merged(csv_file, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shard_tfrecords(csv_file, a, label="label", num_shards=1, layout="blocks", block_rows=8)
    shard_tfrecords(csv_file, b, label="label", num_shards=1, layout="blocks", block_rows=9)
    with pytest.raises(ValueError, match="only Datasets of one table can be merged"):
        merge_datasets([a, b], str(tmp_path / "merged"))


@pytest.mark.parametrize("block_rows", [0, 65_537])
def test_block_rows_out_of_range_are_refused_before_reading(csv_file, tmp_path, block_rows):
    with pytest.raises(ShardInputError, match=f"block_rows {block_rows} is outside 1..65536"):
        shard_tfrecords(csv_file, str(tmp_path / "out"), label="label", layout="blocks",
                        block_rows=block_rows)
    assert not (tmp_path / "out").exists()


def test_an_unknown_layout_is_refused_naming_the_allowed_values(csv_file, tmp_path):
    message = r"layout 'rows' is not one of columns, packed, blocks"
    with pytest.raises(ShardInputError, match=message):
        ShardOptions(layout="rows")
    with pytest.raises(ShardInputError, match=message):
        shard_tfrecords(csv_file, str(tmp_path / "out"), label="label", layout="rows")
    assert not (tmp_path / "out").exists()
