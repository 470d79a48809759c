import json
import os
import re
from typing import NamedTuple

import pytest
from kfp import dsl, local

from tfkfp.components.shard_tfrecords.component import shard_tfrecords
from tfkfp.components.train.component import train


@pytest.mark.slow
def test_trains_inside_a_local_pipeline(demo_dir, tmp_path):
    class Trained(NamedTuple):
        model: dsl.Model
        classification: dsl.ClassificationMetrics

    @dsl.pipeline
    def shard_and_train(csv: str) -> Trained:
        data = shard_tfrecords(input_uri=csv, label="label", keys=["id"])
        task = train(dataset=data.outputs["dataset"], epochs=4, target_value=0.5)
        return Trained(task.outputs["model"], task.outputs["classification"])

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    run = shard_and_train(csv=demo_dir.csv)
    model = run.outputs["model"]
    matrix = run.outputs["classification"].metadata["confusionMatrix"]  # what the UI draws
    assert [s["displayName"] for s in matrix["annotationSpecs"]] == [str(i) for i in range(10)]
    assert [len(row["row"]) for row in matrix["rows"]] == [10] * 10
    assert model.metadata["strategy"] == "default"
    assert model.metadata["eval_accuracy"] > 0.85
    assert model.metadata["signatures"] == ["serving_default", "serving_raw"]
    assert os.path.exists(os.path.join(model.path, "saved_model.pb"))
    root = tmp_path / "root"
    reports = list(root.rglob("report"))
    assert reports and "# Training report" in reports[0].read_text()
    (page,) = [p for p in root.rglob("charts") if p.is_file()]  # what every UI version shows
    text = page.read_text()
    assert "<h2>Curves per epoch</h2><figure><svg" in text
    # self-contained: a heatmap is a PNG inside its SVG, nothing is fetched from elsewhere
    assert not re.findall(r'(?:src|href)="(?!data:image/|#)[^"]*"', text)
    assert list(root.rglob("events.out.tfevents.*")), "no TensorBoard logs were written"
    (resources,) = root.rglob("gcp_resources")  # launcher local ran nothing on Vertex AI
    assert json.loads(resources.read_text()) == {"resources": []}


def test_component_continues_from_a_model_uri_and_logs_the_confusion_matrix(demo_dataset,
                                                                             tmp_path):
    """The component body, called as the step calls it: warm_start_model_uri reaches train
    (a step at a vanishing learning rate keeps the earlier model's accuracy, which a fresh
    model does not have), and the eval split's matrix goes to ClassificationMetrics."""
    from tfkfp.components.train.core import train as run_training

    small = {"hidden_units": "32", "seed": 4}
    earlier = run_training(demo_dataset, str(tmp_path / "earlier"), epochs=2, **small)
    still = {"epochs": 1, "steps_per_epoch": 1, "learning_rate": 1e-9, **small}
    fresh = run_training(demo_dataset, str(tmp_path / "fresh"), **still)
    model = dsl.Model(uri=str(tmp_path / "warm"))
    classification = dsl.ClassificationMetrics(uri=str(tmp_path / "classification"))
    train.python_func(
        dataset=dsl.Dataset(uri=demo_dataset), model=model,
        metrics=dsl.Metrics(uri=str(tmp_path / "metrics")), classification=classification,
        report=dsl.Markdown(uri=str(tmp_path / "report")),
        charts=dsl.HTML(uri=str(tmp_path / "charts")),
        tensorboard=dsl.Artifact(uri=str(tmp_path / "tensorboard")),
        gcp_resources=str(tmp_path / "gcp_resources"), warm_start_model_uri=earlier.model_dir,
        **still)
    assert model.metadata["warm_started_from"] == earlier.model_dir
    assert earlier.figures["eval_accuracy"] > fresh.figures["eval_accuracy"] + 0.3
    assert model.metadata["eval_accuracy"] >= earlier.figures["eval_accuracy"] - 0.05
    matrix = classification.metadata["confusionMatrix"]
    assert [s["displayName"] for s in matrix["annotationSpecs"]] == [str(i) for i in range(10)]
    rows = [row["row"] for row in matrix["rows"]]
    assert len(rows) == 10 and all(len(row) == 10 for row in rows)
    assert sum(map(sum, rows)) == classification.metadata["examples"] > 0
    right = sum(rows[i][i] for i in range(10)) / classification.metadata["examples"]
    assert right == pytest.approx(model.metadata["eval_accuracy"], abs=1e-6)
    assert "confidenceMetrics" not in classification.metadata  # ten classes: no ROC curve
