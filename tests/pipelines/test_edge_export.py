"""The edge_export pipeline under the KFP local runner: freeze_quantize chooses, export_tflite
ships exactly that model, run through the command a user types."""

import json
import os
import re

import pytest
from kfp import compiler

from tfkfp.cli.main import main
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


@pytest.mark.slow
def test_a_plain_savedmodel_goes_through_auto_with_a_failing_mode_skipped(
        plain_mobilenet, digit_images, tmp_path, capsys):
    """MobileNetV2 saved with tf.saved_model.save (serving_default, random weights): auto
    skips int16x8, which LiteRT cannot prepare, and ships the smallest other mode."""
    import tensorflow as tf

    [name] = tf.saved_model.load(plain_mobilenet).signatures["serving_default"] \
        .structured_input_signature[1]
    root = tmp_path / "root"
    settings = {"model_uri": plain_mobilenet, "dataset_uri": digit_images,
                "input_mapping": json.dumps({name: "image"}), "calibration_examples": 20,
                "eval_examples": 40, "max_accuracy_drop": 1.0, "min_agreement": 0.0}
    code = main(["run", "edge_export", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert code == 0
    [quantized] = [d for d, _, files in os.walk(root) if "quantization.json" in files]
    chosen = json.load(open(os.path.join(quantized, "quantization.json")))
    assert chosen["signature"] == "serving_default"
    assert chosen["input_columns"] == {name: "image"}
    assert list(chosen["skipped"]) == ["int16x8"]
    assert "DEPTHWISE_CONV_2D" in chosen["skipped"]["int16x8"]
    assert set(chosen["modes"]) == {"none", "dynamic", "float16", "int8"}
    assert chosen["mode"] == min(chosen["modes"], key=lambda m: chosen["modes"][m]["size_bytes"])
    report = next(root.rglob("freeze-quantize/report")).read_text()
    assert "| int16x8 | skipped: RuntimeError: " in report
    bundle = next(root.rglob("export-tflite/bundle"))
    signature = json.load(open(bundle / "signature.json"))
    assert signature["signature"] == "serving_default"
    assert signature["inputs"][name]["column"] == "image"
    assert signature["inputs"][name]["shape"] == [-1, 32, 32, 1]  # 8x8 digits resized
