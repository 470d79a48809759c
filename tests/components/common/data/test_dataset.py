"""The Dataset directory contract: one reader and writer of manifest.json for every component."""

import json
import os
import re

import pytest

from conftest import cut_shard, write_csv
from tfkfp.components.common.data.dataset import (
    MANIFEST_FILE,
    DatasetMismatchError,
    Manifest,
    compression_of_files,
    is_dataset,
    select_group,
    split_files,
    tf_compression,
)
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.shard_tfrecords.core import shard_tfrecords


def test_written_manifest_reads_back_with_files_resolved(tmp_path):
    splits = {"train": {"records": 5, "bytes": 50, "shards": [
        {"file": "train/a.tfrecord.gz", "records": 3}, {"file": "gs://b/x.tfrecord.gz",
                                                         "records": 2}]}}
    Manifest(str(tmp_path), splits, "gzip", ("p1", "p2")).save()
    body = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert body["version"] == 1 and body["schema"] == "schema.json"
    assert body["merged_from"] == ["p1", "p2"]
    manifest = Manifest.load(str(tmp_path))
    assert manifest.records("train") == 5
    assert manifest.shard_records("train") == [3, 2]
    assert manifest.shard_files("train") == [os.path.join(str(tmp_path), "train/a.tfrecord.gz"),
                                             "gs://b/x.tfrecord.gz"]
    assert split_files(str(tmp_path), "train")[1] == "GZIP"
    assert is_dataset(str(tmp_path)) and not is_dataset(str(tmp_path / "nope"))


def test_a_folder_without_manifest_and_an_unknown_split_say_what_is_there(tmp_path):
    with pytest.raises(SchemaError, match=f"has no {MANIFEST_FILE}: it is not a complete"):
        Manifest.load(str(tmp_path))
    Manifest(str(tmp_path), {"train": {"records": 0, "bytes": 0, "shards": []}}).save()
    with pytest.raises(SchemaError, match=r"has no split 'eval'; it has \['train'\]"):
        split_files(str(tmp_path), "eval")


def test_file_patterns_take_their_compression_from_the_extension(tmp_path):
    for name in ("a.tfrecord", "b.tfrecord", "c.tfrecord.gz"):
        (tmp_path / name).write_bytes(b"")
    assert split_files(str(tmp_path / "*.tfrecord"), "train")[1] == ""
    assert split_files(str(tmp_path / "*.gz"), "train")[1] == "GZIP"
    with pytest.raises(SchemaError, match="matches both .gz and uncompressed"):
        compression_of_files(["a.tfrecord", "b.tfrecord.gz"], "data/*")
    with pytest.raises(SchemaError, match="no TFRecord files match"):
        split_files(str(tmp_path / "*.nothing"), "train")
    with pytest.raises(SchemaError, match=r"compression 'zstd' is not one of"):
        tf_compression("zstd")


def test_select_group_takes_every_nth_item_and_names_the_bad_group():
    assert select_group(list("abcde"), 1, 2) == ["b", "d"]
    with pytest.raises(KeyError, match="file group 2 of 2 is not valid"):
        select_group(list("ab"), 2, 2, what="shard", error=KeyError)
    with pytest.raises(ValueError, match="file group 2 of 3 is empty: the input has only 2"):
        select_group(["a", "b"], 2, 3)
    assert select_group(range(2), 2, 3, allow_empty=True) == []


@pytest.fixture
def sharded(tmp_path):
    rows = [[i, i * 0.5, "yes" if i % 3 else "no"] for i in range(600)]
    out = str(tmp_path / "ds")
    shard_tfrecords(write_csv(tmp_path / "t.csv", ["id", "x", "label"], rows), out,
                    label="label", keys=["id"], num_shards=2)
    return out


def test_a_shard_cut_on_a_record_boundary_is_refused_before_reading_naming_it(sharded):
    shard = Manifest.load(sharded).shard_files("train")[1]
    records, before, after = cut_shard(shard, 100)
    assert records > 100 and after < before
    expected = (f"{re.escape(shard)} is {after} bytes, expected {before} bytes.*truncated, "
                "replaced or removed")
    with pytest.raises(DatasetMismatchError, match=expected):
        split_files(sharded, "train")
    with pytest.raises(DatasetMismatchError, match=expected):
        make_dataset(sharded, mode="train")
    assert split_files(sharded, "eval")[0]  # the other split is whole
    assert Manifest.load(sharded).shard_files("train", check=False)[1] == shard
    os.remove(shard)
    with pytest.raises(DatasetMismatchError, match=f"{re.escape(shard)} is missing, expected "
                       f"{before} bytes"):
        split_files(sharded, "train")


def test_a_schema_that_is_not_the_manifests_is_refused(sharded):
    path = os.path.join(sharded, "schema.json")
    with open(path, "a") as f:
        f.write(" ")
    with pytest.raises(DatasetMismatchError, match="schema.json does not match .*manifest.json: "
                       "expected SHA-256 [0-9a-f]{64}, found [0-9a-f]{64}"):
        split_files(sharded, "eval")
