"""The Dataset directory contract: one reader and writer of manifest.json for every component."""

import json
import os

import pytest

from tfkfp.components.common.dataset import (
    MANIFEST_FILE,
    Manifest,
    compression_of_files,
    is_dataset,
    select_group,
    split_files,
    tf_compression,
)
from tfkfp.components.common.schema import SchemaError


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
    with pytest.raises(KeyError, match="shard group 2 of 2 is not valid"):
        select_group(list("ab"), 2, 2, what="shard", error=KeyError)
    with pytest.raises(ValueError, match="file group 2 of 3 is empty: the input has only 2"):
        select_group(["a", "b"], 2, 3)
    assert select_group(range(2), 2, 3, allow_empty=True) == []
