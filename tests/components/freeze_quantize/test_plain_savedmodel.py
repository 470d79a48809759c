"""Any SavedModel to the edge: models saved with tf.saved_model.save (and Keras 3's
model.export()), with no tfkfp signature or assets, through freeze_quantize and export_tflite.
The image column feeds the one input; the gate reads the model's class scores."""

import json
import os

import pytest

from tfkfp.components.common.tflite import convert as tflite_convert
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.parity import QualityGateError, Timing
from tfkfp.components.export_tflite.core import export_tflite
from tfkfp.components.freeze_quantize.core import freeze_quantize


def test_a_mismatch_is_refused_before_any_conversion(plain_cnn, demo_dataset, tmp_path,
                                                      monkeypatch):
    def conversion_started(*args, **kwargs):
        raise AssertionError("the mismatch was not refused before the conversion work")

    monkeypatch.setattr(tflite_convert, "prepare", conversion_started)
    # the digits as 64 int64 pixel columns: no column is the CNN's 8x8x1 image
    want = (r"signature 'serving_default' takes inputs that no feature column of dataset .* "
            r"feeds: pixels \(float32 \[None, 8, 8, 1\]\); its feature columns are "
            r"\['pixel_0 \(int64 \[None\]\)', .* 'and 44 more'\]")
    with pytest.raises(QuantizeInputError, match=want):
        freeze_quantize(plain_cnn, demo_dataset, str(tmp_path / "t"), str(tmp_path / "f"))
    with pytest.raises(QuantizeInputError, match=r"column 'pixel_0' of dataset .* \(int64 "
                                                 r"\[None\]\) cannot feed signature "
                                                 r"'serving_default' input 'pixels' \(float32 "
                                                 r"\[None, 8, 8, 1\]\): the shapes differ"):
        export_tflite(plain_cnn, demo_dataset, str(tmp_path / "b"), quantization="int8",
                      input_mapping='{"pixels": "pixel_0"}')
    assert not os.listdir(tmp_path)


@pytest.fixture(scope="module")
def plain_auto(plain_cnn, digit_images, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain_auto")
    return freeze_quantize(plain_cnn, digit_images, str(out / "tflite"), str(out / "frozen"),
                           calibration_examples=200, timing=Timing(32, 2))


@pytest.mark.slow
def test_int8_of_a_plain_cnn_trained_here_stays_within_a_point(plain_auto):
    assert plain_auto.signature == "serving_default"
    assert plain_auto.input_columns == {"pixels": "image"}
    int8 = next(f for f in plain_auto.figures if f.mode == "int8")
    assert int8.reference_accuracy > 0.9 and int8.examples > 100
    assert int8.accuracy >= int8.reference_accuracy - 0.01, int8
    metrics = plain_auto.metrics()
    for mode in ("none", "dynamic", "float16", "int8"):
        assert {f"{mode}_accuracy", f"{mode}_agreement", f"{mode}_relative_error",
                f"{mode}_seconds"} <= set(metrics)
    assert plain_auto.chosen.accuracy_drop <= 0.01


@pytest.mark.slow
def test_a_cnn_sweeps_by_default_without_int16x8_and_the_report_says_why(plain_auto):
    assert [f.mode for f in plain_auto.figures] == ["none", "dynamic", "float16", "int8"]
    assert list(plain_auto.skipped) == ["int16x8"]
    assert plain_auto.skipped["int16x8"].startswith("not in the default sweep: the model has "
                                                    "Conv2D")
    assert "| int16x8 | skipped: not in the default sweep" in plain_auto.markdown()
    assert all(f.seconds > 0 for f in plain_auto.figures)


@pytest.mark.slow
def test_the_bundle_of_a_plain_model_names_its_column_and_classes(plain_auto, plain_cnn,
                                                                  digit_images, tmp_path):
    out = tmp_path / "bundle"
    result = export_tflite(plain_cnn, digit_images, str(out), quantized_dir=plain_auto.tflite_dir)
    assert sorted(os.listdir(out)) == ["labels.txt", "model.tflite", "schema.json",
                                       "signature.json", "validation.json"]
    assert open(out / "labels.txt").read().split() == [str(i) for i in range(10)]
    sig = json.load(open(out / "signature.json"))
    assert sig["signature"] == "serving_default" and sig["num_classes"] == 10
    assert sig["inputs"]["pixels"]["column"] == "image"
    assert sig["inputs"]["pixels"]["normalization"].startswith("decoded image resized to 8x8x1")
    assert sig["outputs_meaning"] == {"scores": "class scores, in labels.txt order"}
    metrics = result.metrics()
    assert metrics["agreement"] >= 0.98 and metrics["accuracy"] > 0.9


@pytest.mark.slow
def test_the_gate_failure_gives_accuracy_and_agreement(plain_cnn, digit_images, tmp_path):
    with pytest.raises(QualityGateError, match=r"export gate \(float16\) of model .*: "
                                               r"accuracy \d\.\d+ vs "
                                               r"\d\.\d+ for the SavedModel on \d+ examples, .*"
                                               r"above max_accuracy_drop -50\.00 points .*"
                                               r"agreement \d\.\d+, relative error"):
        export_tflite(plain_cnn, digit_images, str(tmp_path / "b"), quantization="float16",
                      max_accuracy_drop=-0.5)
    assert not os.listdir(tmp_path)


def _value_model(path):
    """An untrained plain model whose output is one value per example, not class scores."""
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(6)
    inputs = tf_keras.Input((8, 8, 1))
    x = tf_keras.layers.Flatten()(inputs)
    outputs = tf_keras.layers.Dense(1)(tf_keras.layers.Dense(8, activation="relu")(x))
    tf.saved_model.save(tf_keras.Model(inputs, outputs), path)
    return path


@pytest.mark.slow
def test_outputs_that_are_not_class_scores_are_gated_on_relative_error(digit_images, tmp_path):
    model = _value_model(str(tmp_path / "model"))
    out = tmp_path / "out"
    result = freeze_quantize(model, digit_images, str(out / "t"), str(out / "f"),
                             quantization="none", eval_examples=50)
    assert result.chosen.agreement is None and result.chosen.accuracy is None
    assert result.chosen.relative_error < 1e-3
    assert "none_agreement" not in result.metrics()
    with pytest.raises(QualityGateError, match=r"quantization 'dynamic' of model .*: "
                                               r"relative error \d\.\d+ vs the SavedModel on 50 "
                                               r"examples, above max_relative_error -1\.0000"):
        freeze_quantize(model, digit_images, str(out / "t2"), str(out / "f2"),
                        quantization="dynamic", eval_examples=50, max_relative_error=-1.0)


@pytest.mark.slow
def test_a_keras3_export_converts(digit_images, tmp_path):
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3),
                              keras.layers.Flatten(), keras.layers.Dense(10, "softmax")])
    model.export(str(tmp_path / "model"), verbose=False)
    result = freeze_quantize(str(tmp_path / "model"), digit_images, str(tmp_path / "t"),
                             str(tmp_path / "f"), quantization="float16", eval_examples=50)
    assert result.signature == "serving_default"
    assert list(result.input_columns.values()) == ["image"]
    assert result.chosen.agreement >= 0.98


@pytest.mark.slow
def test_auto_fails_only_when_no_mode_converts(erf_model, demo_dataset, tmp_path):
    with pytest.raises(QualityGateError) as err:
        freeze_quantize(erf_model, demo_dataset, str(tmp_path / "t"), str(tmp_path / "f"),
                        eval_examples=20, calibration_examples=20)
    message = str(err.value)
    assert message.startswith(f"auto: no mode of model {erf_model} was measured (none: "
                              "skipped, ConversionError")
    for mode in tflite_modes.MODES:
        assert f"{mode}: skipped, ConversionError: converting signature 'serving_raw'" in message
    assert "op(s) Erf have no TFLite builtin kernel" in message
    assert not os.listdir(tmp_path)
