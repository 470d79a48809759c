import json
import os
from typing import NamedTuple

import pytest
from kfp import local

from tfkfp.components.export_tflite.component import export_tflite


@pytest.mark.slow
def test_runs_under_the_kfp_local_runner(dynamic_dir, demo_model, demo_dataset, tmp_path):
    from kfp import dsl

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)

    class Exported(NamedTuple):
        bundle: dsl.Model
        classification: dsl.ClassificationMetrics

    @dsl.pipeline
    def export(model_uri: str, dataset_uri: str, quantized_uri: str) -> Exported:
        model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model)
        data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset)
        quantized = dsl.importer(artifact_uri=quantized_uri, artifact_class=dsl.Model)
        task = export_tflite(model=model.output, dataset=data.output,
                             tflite_model=quantized.output, eval_examples=100)
        return Exported(task.outputs["bundle"], task.outputs["classification"])

    run = export(model_uri=demo_model, dataset_uri=demo_dataset, quantized_uri=dynamic_dir)
    bundle = run.outputs["bundle"]
    classification = run.outputs["classification"].metadata  # what the KFP UI draws
    rows = [row["row"] for row in classification["confusionMatrix"]["rows"]]
    assert [s["displayName"] for s in classification["confusionMatrix"]["annotationSpecs"]] == [
        str(i) for i in range(10)]
    assert [len(row) for row in rows] == [10] * 10
    assert sum(map(sum, rows)) == classification["examples"] == 100
    assert sum(rows[i][i] for i in range(10)) / 100 == pytest.approx(bundle.metadata["accuracy"])
    assert bundle.metadata["mode"] == "dynamic" and bundle.metadata["agreement"] >= 0.98
    assert bundle.metadata["source"] == dynamic_dir
    assert sorted(os.listdir(bundle.path)) == ["labels.txt", "model.tflite", "schema.json",
                                               "signature.json", "validation.json"]
    assert json.load(open(os.path.join(bundle.path, "signature.json")))["num_classes"] == 10
