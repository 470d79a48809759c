import json
import os

import pytest
from kfp import local

from tfkfp.components.freeze_quantize.component import freeze_quantize


@pytest.mark.slow
def test_runs_under_the_kfp_local_runner(demo_model, demo_dataset, tmp_path):
    from kfp import dsl

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)

    @dsl.pipeline
    def quantize(model_uri: str, dataset_uri: str) -> dsl.Model:
        model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model)
        data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset)
        return freeze_quantize(model=model.output, dataset=data.output, quantization="dynamic",
                               eval_examples=100, latency_batch_size=16,
                               latency_runs=2).outputs["tflite_model"]

    tflite = quantize(model_uri=demo_model, dataset_uri=demo_dataset).output
    assert tflite.metadata["mode"] == "dynamic"
    assert tflite.metadata["modes"]["dynamic"]["examples"] == 100
    assert sorted(os.listdir(tflite.path)) == ["model.tflite", "quantization.json"]
    saved = json.load(open(os.path.join(tflite.path, "quantization.json")))
    assert saved["size_bytes"] == os.path.getsize(os.path.join(tflite.path, "model.tflite"))
    runs = str(tmp_path / "root")
    found = {name: os.path.join(d, name) for d, _, files in os.walk(runs) for name in files}
    assert {"frozen_graph.pb", "frozen_graph.json", "report", "charts"} <= set(found)
    assert "| **dynamic** (chosen) |" in open(found["report"]).read()
    assert "<h2>Size against accuracy per mode" in open(found["charts"]).read()
