import json
import os

import pytest
from kfp import local

from tfkfp.components.export_tflite.component import export_tflite


@pytest.mark.slow
def test_runs_under_the_kfp_local_runner(dynamic_dir, demo_model, demo_dataset, tmp_path):
    from kfp import dsl

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)

    @dsl.pipeline
    def export(model_uri: str, dataset_uri: str, quantized_uri: str) -> dsl.Model:
        model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model)
        data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset)
        quantized = dsl.importer(artifact_uri=quantized_uri, artifact_class=dsl.Model)
        return export_tflite(model=model.output, dataset=data.output,
                             quantized_model=quantized.output,
                             eval_examples=100).outputs["bundle"]

    bundle = export(model_uri=demo_model, dataset_uri=demo_dataset,
                    quantized_uri=dynamic_dir).output
    assert bundle.metadata["mode"] == "dynamic" and bundle.metadata["agreement"] >= 0.98
    assert bundle.metadata["source"] == dynamic_dir
    assert sorted(os.listdir(bundle.path)) == ["labels.txt", "model.tflite", "signature.json",
                                               "validation.json"]
    assert json.load(open(os.path.join(bundle.path, "signature.json")))["num_classes"] == 10
