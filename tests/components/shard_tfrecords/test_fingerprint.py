"""The input fingerprint that keys sharding's cache: same URI, changed data, another key."""

import os

import yaml

from conftest import write_csv
from tfkfp.components.shard_tfrecords.sources import fingerprint
from tfkfp.pipelines import registry


def test_the_fingerprint_changes_with_the_data_not_with_reading_it(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = write_csv(folder / "a.csv", ["x", "label"], [[1, 0], [2, 1]])
    first = fingerprint(str(folder))
    assert fingerprint(str(folder)) == first  # reading changes nothing
    write_csv(folder / "a.csv", ["x", "label"], [[1, 0], [2, 1], [3, 0]])  # new rows
    grown = fingerprint(str(folder))
    assert grown != first
    stat = os.stat(path)
    os.utime(path, (stat.st_atime, stat.st_mtime + 60))  # same size, rewritten later
    assert fingerprint(str(folder)) not in (first, grown)
    write_csv(folder / "b.csv", ["x", "label"], [[4, 1]])  # a file added
    assert fingerprint(str(folder)).startswith("sha256:")
    assert fingerprint(str(folder / "*.csv")) == fingerprint(str(folder))


def test_an_image_folder_counts_every_image(tmp_path):
    for name in ("cat", "dog"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "1.png").write_bytes(b"png")
    before = fingerprint(str(tmp_path))
    (tmp_path / "dog" / "2.png").write_bytes(b"png")
    assert fingerprint(str(tmp_path)) != before


def test_sharding_takes_the_uncached_fingerprint_in_the_compiled_pipelines():
    for name in ("training", "batch_prediction"):
        spec = yaml.safe_load(open(registry.golden_path(name)))
        tasks = {}
        for component in [spec["root"], *spec["components"].values()]:
            tasks.update(component.get("dag", {}).get("tasks", {}))
        fingerprint_task = tasks["fingerprint-input"]
        assert fingerprint_task["cachingOptions"] == {}  # caching off (enableCache absent)
        # no KFP retry, which reruns any failure: the step retries transient faults itself
        assert "retryPolicy" not in fingerprint_task
        shard = tasks["shard-tfrecords"]
        assert shard["cachingOptions"] == {"enableCache": True}
        source = shard["inputs"]["parameters"]["input_fingerprint"]
        assert "fingerprint-input" in str(source), source
