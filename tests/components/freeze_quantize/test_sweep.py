"""The sweep the user controls (which modes, how long, each mode's seconds in the report) and
the gate's refusal of a model whose outputs do not vary over the examples, in
freeze_quantize and export_tflite."""

import json
import logging
import os
import time

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


def test_latency_is_timed_for_its_seconds_not_a_fixed_count(plain_cnn, digit_images, tmp_path):
    result = freeze_quantize(plain_cnn, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                             quantization="none", eval_examples=40, max_accuracy_drop=1.0,
                             timing=Timing(8, 100_000, seconds=1.0))
    [none] = result.figures
    assert 1 <= none.latency_runs_example < 500_000 and 1 <= none.latency_runs_batch < 100_000
    assert not none.cut_short  # latency_seconds is the mode's own limit, not a cut
    # Generous, so it cannot flake: a call of this 8x8 CNN takes well under a millisecond,
    # so the 600,000 calls asked for would take minutes; the rest (conversion, 40 examples)
    # takes a few seconds here.
    assert none.seconds < 1.0 + 60
    saved = json.load(open(os.path.join(tmp_path / "t", "quantization.json")))
    assert saved["latency_runs_example"] == none.latency_runs_example


def test_a_budget_spent_by_the_first_conversion_fails_naming_every_mode(plain_cnn, digit_images,
                                                                        tmp_path):
    with pytest.raises(QualityGateError) as err:
        freeze_quantize(plain_cnn, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                        modes=["none", "dynamic", "float16"], sweep_seconds=1e-6,
                        eval_examples=40, max_accuracy_drop=1.0, timing=Timing(8, 1))
    message = str(err.value)
    assert message.startswith(f"auto: no mode of model {plain_cnn} was measured in full within "
                              "sweep_seconds 1e-06 (none: cut short: converted in ")
    assert ("then not one of 40 examples was evaluated before the sweep_seconds budget of "
            "1e-06s ran out; nothing was measured; dynamic: skipped, not started: the sweep "
            "had spent ") in message
    assert message.count("of its sweep_seconds budget of 1e-06s and a conversion took") == 2
    assert message.endswith("raise sweep_seconds, or lower eval_examples or latency_seconds, "
                            "or name fewer modes")
    assert not os.path.exists(tmp_path / "t")  # nothing chosen, nothing written


SWEEP_SECONDS = 8.0
# What the deadline cannot stop: the first conversion (about 2 s for this CNN here, started
# at the sweep's first second) and one LiteRT call (milliseconds). A sweep that ignored the
# deadline would time 100,000 latency calls for up to 600 s.
CONVERSION_MARGIN = 45.0


def test_the_budget_stops_the_mode_in_progress_on_a_299x299_cnn(cnn_299, digit_images,
                                                                tmp_path, caplog):
    """The default sweep (eval_examples, calibration and modes as the pipeline has them) of
    a bring-your-own CNN on 299x299 images, its latency asked for far more than the budget:
    the mode in progress is cut at the deadline and the others are not started."""
    caplog.set_level(logging.INFO, logger="tfkfp.freeze_quantize")
    with pytest.raises(QualityGateError) as err:
        freeze_quantize(cnn_299, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                        sweep_seconds=SWEEP_SECONDS, timing=Timing(256, 100_000, seconds=600))
    ended = time.time()
    began = next(r.created for r in caplog.records
                 if r.getMessage().startswith("auto: sweeping none, dynamic, float16, int8 "))
    assert ended - began < SWEEP_SECONDS + CONVERSION_MARGIN
    message = str(err.value)
    assert message.startswith(f"auto: no mode of model {cnn_299} was measured in full within "
                              "sweep_seconds 8 (none: cut short: ")
    for mode in ("dynamic", "float16", "int8"):
        assert f"{mode}: skipped, not started: the sweep had spent " in message
    assert "int16x8: skipped, not in the default sweep" in message


class TickingClock:
    """Time that moves one second each time it is read: a deadline a few reads away is
    reached part way through the evaluation, whatever the machine's speed."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_an_evaluation_cut_short_gives_the_figures_of_the_examples_it_ran(plain_cnn,
                                                                          digit_images):
    from tfkfp.components.common.tflite import binding, budget, parity
    from tfkfp.components.common.tflite import convert as tflite_convert
    from tfkfp.components.common.tflite import inputs as tflite_inputs

    _, fn, signature = tflite_inputs.load_model(plain_cnn)
    bound = binding.bind(fn, signature, tflite_inputs.dataset_schema(digit_images), "d")
    examples = tflite_inputs.load_examples(digit_images, "eval", 40, bound, "evaluation")
    reference = tflite_inputs.reference_outputs(fn, examples)
    content = tflite_convert.convert(plain_cnn, signature, "none")
    clock = TickingClock()
    deadline = budget.Deadline(clock() + 12, clock, 12)
    figures = parity.compare("none", content, signature, examples, reference, Timing(8, 5),
                             reading=bound.reading, deadline=deadline)
    assert 0 < figures.examples < 40
    assert figures.cut_short == (f"evaluated {figures.examples} of 40 examples before the "
                                 "sweep_seconds budget of 12s ran out")
    assert figures.latency_example_ms is None  # no time was left to time it
    whole = parity.compare("none", content, signature, examples, reference,
                           reading=bound.reading)
    assert whole.examples == 40 and not whole.cut_short
