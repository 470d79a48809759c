"""The edge_export pipeline under the KFP local runner: freeze_quantize chooses, export_tflite
ships exactly that model, run through the command a user types."""

import json
import os
import re

import pytest
from kfp import compiler

from tfkfp.pipelines.cli import main
from tfkfp.pipelines.edge_export import edge_export


def test_compiles(tmp_path):
    out = tmp_path / "edge_export.yaml"
    compiler.Compiler().compile(edge_export, str(out))
    text = out.read_text()
    assert "freeze-quantize" in text and "export-tflite" in text and "importer" in text


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_exports_the_model_freeze_quantize_chose(demo_model, demo_dataset, tmp_path, capsys):
    root = tmp_path / "root"
    # 100 eval examples: one example is a point, so the gate leaves room for a few
    settings = {"model_uri": demo_model, "dataset_uri": demo_dataset, "quantization": "int8",
                "integer_io": "true", "calibration_examples": 50, "eval_examples": 100,
                "max_accuracy_drop": 0.03, "min_agreement": 0.95}
    code = main(["run", "edge_export", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert code == 0  # the command a user types
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("| bundle |"))
    assert float(re.search(r"agreement ([\d.]+)", row).group(1)) >= 0.95
    bundle = next(root.rglob("export-tflite/bundle"))
    assert json.load(open(bundle / "signature.json"))["quantization"] == "int8"
    tflite = [os.path.join(d, "model.tflite") for d, _, files in os.walk(root)
              if "quantization.json" in files]
    assert len(tflite) == 1
    shipped = os.path.join(bundle, "model.tflite")
    assert open(shipped, "rb").read() == open(tflite[0], "rb").read()
    outputs = json.load(open(os.path.join(bundle, "signature.json")))["outputs"]
    assert outputs["probabilities"]["dtype"] == "int8"  # integer_io: apps get scale/zero point
    assert outputs["probabilities"]["quantization"]["scale"] > 0
