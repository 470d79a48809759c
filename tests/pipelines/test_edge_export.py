"""The edge_export pipeline under the KFP local runner: freeze_quantize chooses, export_tflite
ships exactly that model, and an impossible gate fails the run."""

import json
import os

import pytest
from kfp import compiler, local

from tfkfp.pipelines.edge_export import edge_export


def test_compiles(tmp_path):
    out = tmp_path / "edge_export.yaml"
    compiler.Compiler().compile(edge_export, str(out))
    text = out.read_text()
    assert "freeze-quantize" in text and "export-tflite" in text and "importer" in text


@pytest.mark.slow
def test_exports_the_model_freeze_quantize_chose(demo_model, demo_dataset, tmp_path):
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    # 100 eval examples: one example is a point, so the gate leaves room for a few
    bundle = edge_export(model_uri=demo_model, dataset_uri=demo_dataset, mode="int8",
                         integer_io=True, calibration_examples=50, eval_examples=100,
                         max_accuracy_drop=0.03, min_agreement=0.95).output
    assert bundle.metadata["mode"] == "int8"
    assert bundle.metadata["agreement"] >= 0.95
    tflite = [os.path.join(d, "model.tflite") for d, _, files in os.walk(tmp_path / "root")
              if "quantization.json" in files]
    assert len(tflite) == 1
    shipped = os.path.join(bundle.path, "model.tflite")
    assert open(shipped, "rb").read() == open(tflite[0], "rb").read()
    outputs = json.load(open(os.path.join(bundle.path, "signature.json")))["outputs"]
    assert outputs["probabilities"]["dtype"] == "int8"  # integer_io: apps get scale/zero point
    assert outputs["probabilities"]["quantization"]["scale"] > 0
