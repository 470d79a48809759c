"""The edge_export pipeline under the KFP local runner: freeze_quantize chooses, export_tflite
ships exactly that model (with the app's metadata inside), run through the command a user
types."""

import json
import os
import re
import time

import pytest

from conftest import summary_row
from tfkfp.cli.main import main
from tfkfp.components.common.tflite import metadata as tflite_metadata
from tfkfp.pipelines.edge_export import edge_export


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
    row = summary_row(capsys.readouterr().out, "bundle")
    assert float(re.search(r"agreement ([\d.]+)", row).group(1)) >= 0.95
    bundle = next(root.rglob("export-tflite/bundle"))
    assert json.load(open(bundle / "signature.json"))["quantization"] == "int8"
    tflite = [os.path.join(d, "model.tflite") for d, _, files in os.walk(root)
              if "quantization.json" in files]
    assert len(tflite) == 1
    shipped = open(os.path.join(bundle, "model.tflite"), "rb").read()
    app = tflite_metadata.read(shipped)  # the model freeze_quantize chose, the app's JSON in it
    assert app["quantization"] == "int8"
    assert tflite_metadata.embed(open(tflite[0], "rb").read(), app) == shipped
    outputs = json.load(open(os.path.join(bundle, "signature.json")))["outputs"]
    assert outputs["probabilities"]["dtype"] == "int8"  # integer_io: apps get scale/zero point
    assert outputs["probabilities"]["quantization"]["scale"] > 0


@pytest.mark.slow
def test_a_plain_savedmodel_with_constant_outputs_is_refused_in_every_mode(
        plain_mobilenet, digit_images, tmp_path, capsys):
    """MobileNetV2 saved with tf.saved_model.save (serving_default, random weights) answers
    the same scores for every digit image: auto, asked to sweep every mode, skips int16x8,
    which LiteRT cannot prepare, the gate refuses every other mode as constant, naming the
    model, and nothing ships."""
    import tensorflow as tf

    [name] = tf.saved_model.load(plain_mobilenet).signatures["serving_default"] \
        .structured_input_signature[1]
    root = tmp_path / "root"
    settings = {"model_uri": plain_mobilenet, "dataset_uri": digit_images,
                "input_mapping": json.dumps({name: "image"}), "calibration_examples": 20,
                "modes": json.dumps(["none", "dynamic", "float16", "int8", "int16x8"]),
                "eval_examples": 40, "max_accuracy_drop": 1.0, "min_agreement": 0.0}
    code = main(["run", "edge_export", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert code != 0
    printed = "".join(capsys.readouterr())
    assert f"auto: no mode of model {plain_mobilenet} passes the gate" in printed
    for mode in ("none", "dynamic", "float16", "int8"):
        assert f"{mode}: outputs predictions are the same for all 40 examples" in printed
    assert "the SavedModel's are constant too" in printed
    assert "int16x8: skipped, RuntimeError: " in printed and "DEPTHWISE_CONV_2D" in printed
    assert next(root.rglob("export-tflite/bundle/model.tflite"), None) is None


@pytest.mark.parametrize("setting, message", [
    ("latency_runs=0", "latency_batch_size 256 and latency_runs 0: each must be at least 1"),
    ("latency_seconds=-1", "latency_seconds -1.0: expected the seconds (above 0)"),
    ("sweep_seconds=-5", "sweep_seconds -5.0 is below 0"),
])
def test_latency_and_budget_settings_are_refused_before_a_run(setting, message, tmp_path,
                                                              capsys):
    code = main(["run", "edge_export", "--local", "--set", f"model_uri={tmp_path}",
                 "--set", f"dataset_uri={tmp_path}", "--set", setting])
    assert code != 0
    assert message in " ".join("".join(capsys.readouterr()).split())


def test_the_sweep_has_a_budget_and_bounded_latency_by_default():
    inputs = edge_export.component_spec.inputs
    assert inputs["sweep_seconds"].default == 900.0
    assert (inputs["latency_batch_size"].default, inputs["latency_runs"].default,
            inputs["latency_seconds"].default) == (256, 20, 10.0)


TINY_BUDGET = 1.0
# Wall time of the whole local run beyond the budget: the runner, TensorFlow's import,
# loading the model and ~660 digit images resized to 299x299, freezing and one conversion,
# which cannot be interrupted: about 30 s here, so this is generous. The sweep itself is
# timed to the second in tests/components/freeze_quantize/test_sweep.py.
RUN_MARGIN = 240.0


@pytest.mark.slow
def test_a_299x299_cnn_sweep_honours_a_tiny_budget_with_the_defaults(cnn_299, digit_images,
                                                                     tmp_path, capsys):
    """The pipeline's defaults (eval_examples 1000, latency 20 runs of 256 rows, every mode
    but int16x8) and a budget the first conversion alone spends: the mode in progress is
    cut short, the others are not started, the run fails naming them and ships nothing."""
    root = tmp_path / "root"
    settings = {"model_uri": cnn_299, "dataset_uri": digit_images,
                "sweep_seconds": TINY_BUDGET}
    started = time.monotonic()
    code = main(["run", "edge_export", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert time.monotonic() - started < TINY_BUDGET + RUN_MARGIN
    assert code != 0
    printed = " ".join("".join(capsys.readouterr()).split())
    assert (f"auto: no mode of model {cnn_299} was measured in full within sweep_seconds 1 "
            "(none: cut short: ") in printed  # in its evaluation or latency: the load decides
    for mode in ("dynamic", "float16", "int8"):
        assert f"{mode}: skipped, not started: the sweep had spent " in printed
    assert "raise sweep_seconds, or lower eval_examples or latency_seconds" in printed
    assert next(root.rglob("export-tflite/bundle/model.tflite"), None) is None
