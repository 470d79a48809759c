"""batch_predict and merge_predictions as KFP components under the local runner."""

import json
import os

import pytest
import yaml
from kfp import compiler, dsl, local

from tfkfp.components.batch_predict.component import (
    batch_predict,
    merge_predictions,
    vertex_batch_predict,
)


def test_both_components_compile(tmp_path):
    for component in (batch_predict, merge_predictions, vertex_batch_predict):
        out = tmp_path / f"{component.name}.yaml"
        compiler.Compiler().compile(component, str(out))
        executors = yaml.safe_load(out.read_text())["deploymentSpec"]["executors"]
        source = "".join(next(iter(executors.values()))["container"]["command"])
        assert "from tfkfp.components.batch_predict" in source


@pytest.mark.slow
def test_runs_under_the_kfp_local_runner(demo_model, demo_dataset, tmp_path):
    @dsl.pipeline
    def predict_eval(model_uri: str, dataset_uri: str) -> dsl.Markdown:
        model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model)
        data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset)
        with dsl.ParallelFor([0]) as group:
            task = batch_predict(model=model.output, dataset=data.output, split="eval",
                                 output_format="csv", top_k=2, file_group=group)
        merged = merge_predictions(predictions=dsl.Collected(task.outputs["predictions"]))
        return merged.outputs["summary"]

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    summary = predict_eval(model_uri=demo_model, dataset_uri=demo_dataset).output
    text = open(summary.path).read()
    assert "errors; 1 group(s)" in text and "| predictions-00001-of-00002.csv |" in text
    found = []
    for folder, _, names in os.walk(tmp_path / "root"):
        found += [os.path.join(folder, n) for n in names if n.startswith("summary-group-")]
    (body,) = [json.load(open(p)) for p in found]
    assert body["output_format"] == "csv" and body["errors"] == body["error_fraction"] == 0
    assert body["inputs"] == body["predictions"] == 165  # the eval split of the demo data
    first = body["shards"][0]["predictions_file"]
    header = open(os.path.join(os.path.dirname(found[0]), first)).readline()
    assert '"class_2","score_2"' in header
