import re
import shutil

import numpy as np
import pytest

from conftest import cut_shard, cut_shard_of, write_csv
from tfkfp.components.common.data.dataset import DatasetMismatchError, Manifest
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.merge_datasets.core import merge_datasets
from tfkfp.components.shard_tfrecords.core import shard_tfrecords


def one_table_in_two_files(tmp_path):
    """a.csv and b.csv, one table whose label sets differ between the files."""
    folder = tmp_path / "input"
    folder.mkdir()
    write_csv(folder / "a.csv", ["id", "x", "animal"], [[i, i * 0.5, ["cat", "dog"][i % 2]]
                                                        for i in range(300)])
    write_csv(folder / "b.csv", ["id", "x", "animal"], [[i, i * 0.5, ["dog", "emu"][i % 2]]
                                                        for i in range(300, 500)])
    return folder


@pytest.fixture
def two_groups(tmp_path):
    """One table in two files whose label sets differ, sharded as two file groups."""
    folder = one_table_in_two_files(tmp_path)
    parts = []
    for group in range(2):
        out = str(tmp_path / f"part{group}")
        shard_tfrecords(str(folder), out, label="animal", keys=["id"], file_group=group,
                        file_groups=2)
        parts.append(out)
    return parts


def test_merged_dataset_reads_every_record_with_the_union_vocabulary(two_groups, tmp_path):
    result = merge_datasets(two_groups, str(tmp_path / "merged"))
    assert result.schema.label.vocabulary == ("cat", "dog", "emu")
    assert sum(result.records.values()) == 500
    ids, labels = [], []
    for split in ("train", "eval"):
        for _features, label in make_dataset(str(tmp_path / "merged"), mode="eval",
                                            split=split):
            labels.append(label.numpy())
        for _, keys in make_dataset(str(tmp_path / "merged"), mode="predict", split=split):
            ids.append(keys["id"].numpy())
    assert sorted(np.concatenate(ids).tolist()) == list(range(500))
    counts = np.bincount(np.concatenate(labels), minlength=3)
    assert counts.tolist() == [150, 250, 100]  # cat, dog, emu
    assert Schema.load(str(tmp_path / "merged")) == result.schema


def test_datasets_of_different_tables_are_refused(two_groups, tmp_path):
    other = write_csv(tmp_path / "other.csv", ["id", "y", "animal"], [[1, 2.0, "cat"]] * 20)
    shard_tfrecords(other, str(tmp_path / "other"), label="animal", keys=["id"])
    with pytest.raises(SchemaError, match="only Datasets of one table can be merged"):
        merge_datasets([two_groups[0], str(tmp_path / "other")], str(tmp_path / "merged"))


def test_an_incomplete_dataset_is_refused(two_groups, tmp_path):
    with pytest.raises(SchemaError, match="has no manifest.json"):
        merge_datasets([two_groups[0], str(tmp_path)], str(tmp_path / "merged"))


def test_the_merged_dataset_holds_its_shards_and_reads_without_the_parts(two_groups,
                                                                        tmp_path):
    """On a Kubeflow backend a step sees only its own inputs: nothing may point elsewhere."""
    merged = str(tmp_path / "merged")
    merge_datasets(two_groups, merged)
    manifest = Manifest.load(merged)
    for split in manifest.splits:
        for path in manifest.shard_files(split):
            assert path.startswith(merged + "/"), path
    assert manifest.split("train")["shards"][-1]["bytes"] == \
        Manifest.load(two_groups[1]).shard_sizes("train")[-1]
    for part in two_groups:
        shutil.rmtree(part)  # the shard tasks' folders are not in the consumer's pod
    records = sum(len(label) for split in ("train", "eval")
                  for _, label in make_dataset(merged, mode="eval", split=split))
    assert records == 500


def test_a_damaged_shard_is_named_by_every_reader(two_groups, tmp_path):
    merged = str(tmp_path / "merged")
    merge_datasets(two_groups, merged)
    with pytest.raises(DatasetMismatchError, match=cut_shard_of(merged, "train", -1, 10)):
        make_dataset(merged, mode="train")
    part_shard = Manifest.load(two_groups[1]).shard_files("train", check=False)[-1]
    cut_shard(part_shard, 10)  # a damaged part fails the merge, named
    with pytest.raises(DatasetMismatchError, match=re.escape(part_shard)):
        merge_datasets(two_groups, str(tmp_path / "again"))


def test_parts_kept_in_a_data_root_are_listed_by_uri_not_copied(tmp_path):
    """Shards in a data root stay where the shard tasks wrote them: the merged Dataset is a
    manifest and a schema, and reads without the parts' own (small) folders."""
    folder = one_table_in_two_files(tmp_path)
    parts = []
    for group in range(2):
        parts.append(str(tmp_path / f"part{group}"))
        shard_tfrecords(str(folder), parts[-1], label="animal", keys=["id"], file_group=group,
                        file_groups=2, shard_dir=str(tmp_path / "data" / f"g{group}"))
    merged = str(tmp_path / "merged")
    result = merge_datasets(parts, merged, names=["s3://b/run/part0", "s3://b/run/part1"])
    assert sorted(p.name for p in (tmp_path / "merged").iterdir()) == ["manifest.json",
                                                                       "schema.json"]
    manifest = Manifest.load(merged)
    assert manifest.merged_from == ("s3://b/run/part0", "s3://b/run/part1")
    assert {f.rsplit("/", 3)[-3] for f in manifest.listed()} == {"g0", "g1"}
    for part in parts:
        shutil.rmtree(part)
    records = sum(len(label) for split in ("train", "eval")
                  for _, label in make_dataset(merged, mode="eval", split=split))
    assert records == sum(result.records.values()) == 500


def test_parts_in_a_relative_data_root_merge_from_any_working_folder(tmp_path, monkeypatch):
    """A relative data_root is resolved once, against the shard tasks' working folder: the
    parts' manifests list their shards by absolute path, which merge and train find wherever
    they run (before, the shards went to ``<cwd>/shards/...`` and the manifests said
    ``shards/...``, which merge looked for inside each part, and reported missing)."""
    from tfkfp.components.common.data.data_root import shard_dir

    folder = one_table_in_two_files(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    parts = [str(tmp_path / f"part{group}") for group in range(2)]
    for group, part in enumerate(parts):
        shard_tfrecords(str(folder), part, label="animal", keys=["id"], file_group=group,
                        file_groups=2, shard_dir=shard_dir("shards", part))
    monkeypatch.chdir(tmp_path)
    merged = str(tmp_path / "merged")
    result = merge_datasets(parts, merged)
    assert all(f.startswith(str(tmp_path / "work" / "shards") + "/")
               for f in Manifest.load(merged).listed())
    records = sum(len(label) for split in ("train", "eval")
                  for _, label in make_dataset(merged, mode="eval", split=split))
    assert records == sum(result.records.values()) == 500
