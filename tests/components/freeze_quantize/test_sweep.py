"""The sweep the user controls (which modes, how long, each mode's seconds in the report) and
the gate's refusal of a model whose outputs do not vary over the examples, in
freeze_quantize and export_tflite."""

import json
import os

import pytest

from tfkfp.components.common.tflite.parity import QualityGateError, Timing
from tfkfp.components.export_tflite.core import export_tflite
from tfkfp.components.freeze_quantize.core import freeze_quantize

pytestmark = pytest.mark.slow


def _collapsing_model(path):
    """A plain model whose output varies by about 0.01 over the digits but whose hidden
    values sit near 1000: int8's activation range must hold 0, so its step of about 4
    swallows the variation and int8 answers one value for every image; float modes keep it."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    inputs = tf_keras.Input((8, 8, 1))
    x = tf_keras.layers.Flatten()(inputs)
    hidden = tf_keras.layers.Dense(4, activation="relu", name="near_1000")
    outputs = tf_keras.layers.Dense(1, name="value")(hidden(x))
    model = tf_keras.Model(inputs, outputs)
    hidden.set_weights([np.full((64, 4), 0.001, np.float32), np.full(4, 1000.0, np.float32)])
    model.get_layer("value").set_weights([np.full((4, 1), 0.25, np.float32),
                                          np.array([-1000.0], np.float32)])
    tf.saved_model.save(model, path)
    return path


def _constant_model(path):
    """A plain classifier that answers the same scores for every image by construction."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    inputs = tf_keras.Input((8, 8, 1))
    dense = tf_keras.layers.Dense(10, activation="softmax", name="scores")
    model = tf_keras.Model(inputs, dense(tf_keras.layers.Flatten()(inputs)))
    dense.set_weights([np.zeros((64, 10), np.float32), np.arange(10, dtype=np.float32)])
    tf.saved_model.save(model, path)
    return path


@pytest.fixture(scope="module")
def collapsing(tmp_path_factory):
    return _collapsing_model(str(tmp_path_factory.mktemp("collapsing") / "model"))


def test_a_mode_whose_outputs_collapse_to_a_constant_is_not_chosen(collapsing, digit_images,
                                                                   tmp_path):
    result = freeze_quantize(collapsing, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                             modes=["none", "int8"], calibration_examples=50, eval_examples=60,
                             max_relative_error=0.5)
    int8 = next(f for f in result.figures if f.mode == "int8")
    assert int8.constant == ("value",) and not int8.reference_constant
    assert result.mode == "none"  # int8 is smaller but refused
    why = result.not_chosen()["int8"]
    assert why.startswith("outputs value are the same for all 60 examples")
    assert "int8 collapsed them" in why
    assert "| int8 |" in result.markdown() and f"refused: {why}" in result.markdown()
    saved = json.load(open(os.path.join(tmp_path / "t", "quantization.json")))
    assert saved["not_chosen"] == {"int8": why}
    assert saved["modes"]["int8"]["constant"] == ["value"]


def test_export_fails_on_a_mode_whose_outputs_collapse(collapsing, digit_images, tmp_path):
    with pytest.raises(QualityGateError, match=r"^export gate \(int8\) of model .*collapsing.*: "
                                               r"outputs value are the same for all 60 "
                                               r"examples.*int8 collapsed them"):
        export_tflite(collapsing, digit_images, str(tmp_path / "b"), quantization="int8",
                      calibration_examples=50, eval_examples=60, max_relative_error=0.5)
    assert not os.path.exists(tmp_path / "b")


def test_a_model_constant_by_construction_is_refused_in_every_mode(digit_images, tmp_path):
    model = _constant_model(str(tmp_path / "model"))
    with pytest.raises(QualityGateError) as err:
        freeze_quantize(model, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                        modes=["none", "dynamic"], eval_examples=40)
    message = str(err.value)
    assert message.startswith(f"auto: no mode of model {model} passes the gate (none: outputs")
    assert message.count("are the same for all 40 examples") == 2  # none and dynamic
    assert "the SavedModel's are constant too" in message
    with pytest.raises(QualityGateError, match=r"export gate \(none\) of model .*: outputs "
                                               r"scores are the same for all 40 examples"):
        export_tflite(model, digit_images, str(tmp_path / "b"), quantization="none",
                      eval_examples=40, min_agreement=0.0)


def test_modes_not_started_within_the_budget_are_skipped_and_named(plain_cnn, digit_images,
                                                                     tmp_path):
    result = freeze_quantize(plain_cnn, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                             modes=["none", "dynamic", "float16"], sweep_seconds=1e-6,
                             eval_examples=40, max_accuracy_drop=1.0, timing=Timing(8, 1))
    assert [f.mode for f in result.figures] == ["none"]  # the first mode always starts
    assert list(result.skipped) == ["dynamic", "float16"]
    for why in result.skipped.values():
        assert why.startswith("not started: the sweep had spent ")
        assert why.endswith("of its sweep_seconds budget of 1e-06s")
    markdown = result.markdown()
    assert "(sweep budget 1e-06s)" in markdown and "| dynamic | skipped: not started" in markdown
    saved = json.load(open(os.path.join(tmp_path / "t", "quantization.json")))
    assert saved["sweep_seconds"] == 1e-6 and set(saved["skipped"]) == {"dynamic", "float16"}
    assert saved["modes"]["none"]["seconds"] > 0
    assert result.metrics()["none_seconds"] == result.figures[0].seconds
