import json
import os

import pytest
from kfp import dsl, local

from tfkfp.components.shard_tfrecords.component import shard_tfrecords
from tfkfp.components.train.component import train


@pytest.mark.slow
def test_trains_inside_a_local_pipeline(demo_dir, tmp_path):
    @dsl.pipeline
    def shard_and_train(csv: str) -> dsl.Model:
        data = shard_tfrecords(input_uri=csv, label="label", keys=["id"])
        return train(dataset=data.outputs["dataset"], epochs=4,
                     target_accuracy=0.5).outputs["model"]

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    model = shard_and_train(csv=demo_dir.csv).output
    assert model.metadata["strategy"] == "default"
    assert model.metadata["eval_accuracy"] > 0.85
    assert model.metadata["signatures"] == ["serving_default", "serving_raw"]
    assert os.path.exists(os.path.join(model.path, "saved_model.pb"))
    root = tmp_path / "root"
    reports = list(root.rglob("report"))
    assert reports and "# Training report" in reports[0].read_text()
    assert list(root.rglob("events.out.tfevents.*")), "no TensorBoard logs were written"
    (resources,) = root.rglob("gcp_resources")  # launcher local ran nothing on Vertex AI
    assert json.loads(resources.read_text()) == {"resources": []}
