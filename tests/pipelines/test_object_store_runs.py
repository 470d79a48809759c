"""The pipelines as an open-source Kubeflow backend runs them on an S3-compatible artifact
store (SeaweedFS on loopback): each task in its own mount namespace, its input artifacts
downloaded from the store and its outputs uploaded, the bytes counted per task
(tests/isolated_tasks.py). With shards in a data root the launcher moves a few kilobytes of
Dataset however big the data; inside the artifact it moves the Dataset with every step."""

import glob
import os
import re

import numpy as np
import pytest
from isolated_tasks import Store, isolated_tasks, isolation_available

from tfkfp.cli.main import main
from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.platform import fetch_cache, uris

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not isolation_available(),
                                 reason="needs unshare and the right to mount (root)")]


def run_training(store: Store, root: str, sets: dict):
    """``tfkfp run training`` as a user types it, each task as in its own pod."""
    with isolated_tasks(store) as tasks:
        code = main(["run", "training", "--pipeline-root", root,
                     *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]])
    assert code == 0
    return tasks


def fetched(root: str) -> dict:
    """Bytes each task fetched whole from the store, from the line its log ends with."""
    found = {}
    for log in glob.glob(os.path.join(root, "*", "logs", "*.log")):
        for line in open(log, encoding="utf-8", errors="replace"):
            if fetch_cache.SUMMARY in line:
                task = os.path.basename(log)[:-len(".log")]
                found[task] = int(re.search(r"file\(s\), (\d+) bytes", line).group(1))
    return found


def moved(tasks, kind: str, direction: str) -> dict:
    """Bytes of artifacts of ``kind`` moved in ``direction`` per task folder."""
    return {t["task_root"].rsplit("/", 1)[-1]: t.get(direction, {}).get(kind, 0)
            for t in tasks}


@pytest.fixture
def table_on_s3(s3):
    """A 40,000-row table as two CSV files in the store (two file groups)."""
    rng = np.random.default_rng(3)
    header = ",".join([f"x{i}" for i in range(8)] + ["label"])
    for name in ("a.csv", "b.csv"):
        values = rng.normal(size=(20_000, 8)).round(4)
        labels = (values[:, 0] + values[:, 1] > 0).astype(int)
        lines = [",".join(map(str, row)) + f",{label}" for row, label in zip(values, labels)]
        uris.write_text_atomic(uris.join(s3, "input", name), "\n".join([header, *lines]) + "\n")
    return uris.join(s3, "input", "*.csv")


def dataset_bytes(tasks) -> int:
    """The shard bytes of the Dataset train read, from its manifest."""
    (uri,) = {u for t in tasks if "/train/" in t["task_root"] + "/"
              for name, u in t["inputs"].items() if name.startswith("dataset")}
    manifest = Manifest.load(uri)
    return sum(manifest.split(s)["bytes"] for s in manifest.splits)


def launcher_bytes(tasks) -> int:
    """What the launcher moved of the training Dataset: the shard steps' outputs, the
    merged Dataset, and every step's download of them (not the predictions, also a
    Dataset)."""
    return sum(size for t in tasks for _, name, kind, size in t["moved"]
               if kind == "Dataset" and name in ("dataset", "datasets"))


def test_training_moves_a_manifest_not_the_dataset(s3, table_on_s3, tmp_path):
    """Per task the launcher moves a Dataset's manifest and schema when its shards are in
    the data root (the default where the step can write the store), and the whole Dataset
    with every step that takes it when they are inside the artifact."""
    bucket, prefix = s3[len("s3://"):].split("/", 1)
    sets = {"input_uri": table_on_s3, "label": "label", "file_groups": 2, "epochs": 1,
            "quantization": "dynamic"}
    streamed = run_training(Store(bucket, prefix + "/auto"), str(tmp_path / "auto"), sets)
    size = dataset_bytes(streamed)
    for task in streamed:
        for direction, name, _kind, moved in task["moved"]:
            if name in ("dataset", "datasets"):
                assert moved < 16_000, (task["task_root"], direction, name, moved)
    assert launcher_bytes(streamed) <= 0.05 * size
    reads = fetched(str(tmp_path / "auto"))
    assert reads["train"] >= size * 0.85  # train reads the train split, once an epoch
    print("streamed whole from the store, per step:", reads)
    copied = run_training(Store(bucket, prefix + "/inside"), str(tmp_path / "inside"),
                          {**sets, "data_root": "inside"})
    assert dataset_bytes(copied) == size  # the same shards, counted by the launcher now
    print(f"Dataset {size:,} bytes of shards; the launcher moved {launcher_bytes(streamed):,} "
          f"bytes of it with a data root, {launcher_bytes(copied):,} inside the artifact")
    assert launcher_bytes(copied) >= 5 * size  # shard, merge, train, freeze, export, predict


def test_batch_prediction_from_the_store_twice(s3, demo_model, demo_dir, tmp_path):
    """`batch_prediction` with an s3:// model and CSV, as on a cluster, run twice: the
    model comes in through the launcher (an importer's download), the CSV's shards stay in
    the data root, and the second run, cached or not, still finds every shard it lists."""
    bucket, prefix = s3[len("s3://"):].split("/", 1)
    uris.copy_tree(demo_model, uris.join(s3, "model"))
    uris.link_or_copy(demo_dir.csv, uris.join(s3, "new", "digits.csv"))
    sets = {"model_uri": uris.join(s3, "model"), "input_uri": uris.join(s3, "new", "digits.csv"),
            "keys": '["id"]', "file_groups": 2}
    for attempt in range(2):
        root = str(tmp_path / "root")
        with isolated_tasks(Store(bucket, prefix + "/artifacts")) as tasks:
            code = main(["run", "batch_prediction", "--pipeline-root", root,
                         *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]])
        assert code == 0, attempt
        for task in tasks:
            for _, name, kind, moved in task["moved"]:
                if kind == "Dataset" and name == "dataset":
                    assert moved < 16_000, (attempt, task["task_root"], moved)
    model_bytes = sum(os.path.getsize(os.path.join(folder, f))
                      for folder, _, files in os.walk(demo_model) for f in files)
    predicting = [t for t in tasks if "/batch-predict" in t["task_root"]]
    assert len(predicting) == 2  # each group's pod downloads the model it loads
    for task in predicting:
        assert [m for _, name, kind, m in task["moved"] if kind == "Model"] == [model_bytes]


def shards_on_store(dataset_uri: str) -> set:
    """Every object under a Dataset's data-root folder (``<artifact URI>-shards``)."""
    folder = dataset_uri + "-shards"
    return {uris.join(folder, split, name) for split in uris.listdir(folder)
            for name in uris.listdir(uris.join(folder, split))}


def task_named(tasks, name: str) -> list:
    return [t for t in tasks if os.path.basename(t["task_root"]).startswith(name)]


def test_a_killed_shard_task_is_retried_whole_and_a_cached_run_reads_its_shards(
        s3, table_on_s3, tmp_path):
    """A shard task killed midway (one split's shards already on the store) runs again in
    a new pod with the same output URIs, as set_retry does: its data-root folder ends with
    exactly the shards its manifest lists, and the launcher uploaded nothing of the killed
    attempt. A second run with the cache on (another epoch count) reuses the shard and
    merge steps' artifacts, and train, run anew, reads the first run's shards in place."""
    bucket, prefix = s3[len("s3://"):].split("/", 1)
    store, cache, root = Store(bucket, prefix + "/cached"), {}, str(tmp_path / "root")
    sets = {"input_uri": table_on_s3, "label": "label", "file_groups": 2, "epochs": 1,
            "quantization": "dynamic", "batch_size": 256}
    with isolated_tasks(store, kill={"shard-tfrecords": "writing"}, cache=cache,
                        uncached=("fingerprint-input",)) as first:
        assert main(["run", "training", "--pipeline-root", root,
                     *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]]) == 0
    shard_tasks = task_named(first, "shard-tfrecords")
    assert sorted(t["attempts"] for t in shard_tasks) == [["killed", "succeeded"],
                                                          ["succeeded"]]
    produced = {}
    for task in shard_tasks:
        uploads = [m for m in task["moved"] if m[0] == "uploaded"]
        assert [m[1] for m in uploads].count("dataset") == 1  # the retry's, not the kill's
        dataset = store.uri(os.path.relpath(task["task_root"], root) + "/dataset")
        assert shards_on_store(dataset) == Manifest.load(dataset).listed()
        produced[dataset] = Manifest.load(dataset).listed()

    with isolated_tasks(store, cache=cache, uncached=("fingerprint-input",)) as second:
        assert main(["run", "training", "--pipeline-root", root,
                     *[a for k, v in {**sets, "epochs": 2}.items()
                       for a in ("--set", f"{k}={v}")]]) == 0
    ran = {os.path.basename(t["task_root"]) for t in second if not t.get("cached")}
    assert all(t.get("cached") for t in task_named(second, "shard-tfrecords"))
    assert all(t.get("cached") for t in task_named(second, "merge-datasets"))
    (train,) = task_named(second, "train")
    assert train["attempts"] == ["succeeded"]
    assert any(name.startswith("fingerprint-input") for name in ran)
    (read,) = [u for name, u in train["inputs"].items() if name.startswith("dataset")]
    (merged,) = task_named(first, "merge-datasets")
    assert read == store.uri(os.path.relpath(merged["task_root"], root) + "/dataset")
    assert Manifest.load(read).listed() <= set().union(*produced.values())
