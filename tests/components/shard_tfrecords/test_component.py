import json
import os

import pytest
from kfp import dsl, local

from tfkfp.components.shard_tfrecords.component import shard_tfrecords


@pytest.mark.slow
def test_runs_under_the_kfp_local_runner(demo_dir, tmp_path):
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    task = shard_tfrecords(input_uri=demo_dir.csv, label="label", keys=["id"], num_shards=3)
    dataset = task.outputs["dataset"]
    assert dataset.metadata["records"]["train"] + dataset.metadata["records"]["eval"] == 1797
    assert dataset.metadata["num_shards"] == {"train": 3, "eval": 3}
    manifest = json.load(open(os.path.join(dataset.path, "manifest.json")))
    assert len(manifest["splits"]["train"]["shards"]) == 3
    assert "| train |" in open(task.outputs["summary"].path).read()


@pytest.mark.slow
def test_runs_inside_a_local_pipeline(demo_dir, tmp_path):
    @dsl.pipeline
    def shard_images(images: str) -> dsl.Dataset:
        return shard_tfrecords(input_uri=images, compression="gzip").outputs["dataset"]

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    dataset = shard_images(images=demo_dir.images).output
    assert dataset.metadata["schema"]["num_classes"] == 10
    assert dataset.metadata["compression"] == "gzip"
