"""freeze_quantize and export_tflite on a regressor: the gate is the RMSE's increase over the
SavedModel's, the bundle says it is a regressor, and LiteRT answers the same values."""

import json

import numpy as np
import pytest

from tfkfp.components.common.tflite.parity import QualityGateError
from tfkfp.components.export_tflite.core import export_tflite
from tfkfp.components.freeze_quantize.core import freeze_quantize


@pytest.fixture(scope="module")
def quantized(regression_model, regression_dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("regression_quantized")
    result = freeze_quantize(regression_model, regression_dataset, str(out / "tflite"),
                             str(out / "frozen"), modes=("none", "float16", "int8"),
                             max_rmse_increase=0.1)
    return result, str(out / "tflite")


def test_every_mode_is_measured_by_its_rmse(quantized):
    result, _ = quantized
    for f in result.figures:
        assert f.rmse is not None and f.reference_rmse > 0 and f.accuracy is None
        assert f.rmse_increase == pytest.approx(f.rmse / f.reference_rmse - 1, abs=1e-6)
    assert result.chosen.rmse_increase <= 0.1
    table = result.markdown()
    assert "| RMSE | increase |" in table and "accuracy" not in table.split("###")[0]
    metrics = result.metrics()
    assert {"none_rmse", "int8_rmse_increase"} <= set(metrics)
    assert result.metadata()["gate"]["max_rmse_increase"] == 0.1


def test_the_bundle_is_a_regressor_validated_by_rmse(quantized, regression_model,
                                                     regression_dataset, tmp_path):
    from tfkfp.components.common.model.predictor import load_predictor

    _, tflite_dir = quantized
    out = tmp_path / "bundle"
    result = export_tflite(regression_model, regression_dataset, str(out),
                           quantized_dir=tflite_dir, max_rmse_increase=0.1)
    metrics = result.metrics()
    assert metrics["rmse"] > 0 and metrics["savedmodel_rmse"] > 0
    assert metrics["rmse_increase"] <= 0.1 and "accuracy" not in metrics
    signature = json.load(open(out / "signature.json"))
    assert signature["task"] == "regression" and signature["num_classes"] == 0
    assert "regressor" in signature["outputs_meaning"]["value"]
    assert not (out / "labels.txt").exists()
    assert "## Predicted against actual (validation, TFLite model" in result.markdown()
    predictor = load_predictor(str(out))
    assert predictor.regressor and predictor.labels == []


def test_the_rmse_gate_fails_the_export_with_its_figures(regression_model,
                                                         regression_dataset, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(QualityGateError) as err:
        export_tflite(regression_model, regression_dataset, str(out), quantization="none",
                      max_rmse_increase=-0.5)  # must be twice as good as the SavedModel
    message = str(err.value)
    assert f"export gate (none) of model {regression_model}: RMSE" in message
    assert "above max_rmse_increase -50.00%" in message
    assert not out.exists()


def test_a_plain_regressor_is_read_by_its_single_value_output(regression_dataset, tmp_path):
    """A model saved with tf.saved_model.save, one float per example out, on a Dataset whose
    label is a number: its gate is the RMSE increase too."""
    import tensorflow as tf
    import tf_keras

    area = tf_keras.Input((), name="area")
    rooms = tf_keras.Input((), name="rooms", dtype="int64")
    x = tf_keras.layers.Concatenate()([tf_keras.layers.Reshape((1,))(area / 100.0),
                                       tf_keras.layers.Reshape((1,))(tf.cast(rooms, tf.float32))])
    model = tf_keras.Model([area, rooms], tf_keras.layers.Dense(1, name="price")(x))
    model.layers[-1].set_weights([np.array([[200.0], [5.0]], np.float32),
                                  np.array([60.0], np.float32)])  # roughly the table's rule
    out = str(tmp_path / "plain")
    tf.saved_model.save(model, out)
    result = export_tflite(out, regression_dataset, str(tmp_path / "bundle"),
                           quantization="none")
    assert result.figures.rmse == pytest.approx(result.figures.reference_rmse, rel=1e-4)
    assert json.load(open(tmp_path / "bundle" / "signature.json"))["task"] == "regression"
