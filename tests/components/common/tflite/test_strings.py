"""String features and gaps through freezing and TFLite conversion (common.tflite.graph,
tflite_rewrite, tflite_feeding, tflite_convert, litert) on a small real model: every mode
converts to builtins only and runs in LiteRT on NaNs, empty and unknown strings."""

import numpy as np
import pytest
from string_tables import COLOURS, confident, known_colour, probe_rows, savedmodel_outputs

from tfkfp.components.common.data import missing
from tfkfp.components.common.tflite import convert as tflite_convert
from tfkfp.components.common.tflite import feeding as tflite_feeding
from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import litert
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.rewrite import rewrite_bincounts

FLOAT_MODES = ("none", "dynamic", "float16")


@pytest.fixture(scope="module")
def converted(string_table):
    """(prepared, {mode: .tflite bytes}) for every mode, and int8 with integer_io."""
    model = string_table.model
    _, fn = tflite_inputs.load_signature(model, "serving_raw")
    prepared = tflite_convert.prepare(fn)
    names = sorted(prepared.frozen.inputs)
    calibration = tflite_inputs.load_examples(string_table.dataset, "train", 100, names, "c")
    representative = tflite_convert.representative_dataset(calibration.features,
                                                           prepared.feeding.fills)
    out = {}
    with tflite_convert.convertible(model, "serving_raw", fn, prepared) as source:
        for mode in tflite_modes.MODES:
            out[mode] = tflite_convert.convert(model, "serving_raw", mode, representative,
                                               source=source)
        out["int8_io"] = tflite_convert.convert(model, "serving_raw", "int8", representative,
                                                integer_io=True, source=source)
    return prepared, out


def test_freezing_keeps_the_vocabulary_and_finds_the_fill(converted, string_table):
    prepared, _ = converted
    (table,) = prepared.frozen.tables
    assert table.input == "colour"
    assert table.vocabulary() == sorted(COLOURS)  # Unicode, commas and quotes intact
    assert prepared.frozen.rewritten  # the one-hot DenseBincount became builtins
    assert prepared.feeding.fills["x"] == pytest.approx(string_table.fill, abs=1e-6)
    assert prepared.feeding.oov_index["colour"] == 0
    assert prepared.feeding.vocabularies["colour"] == sorted(COLOURS)


@pytest.mark.parametrize("mode", [*tflite_modes.MODES, "int8_io"])
def test_every_mode_runs_gaps_and_unknown_strings_like_the_savedmodel(converted, string_table,
                                                                       mode):
    prepared, contents = converted
    rows = probe_rows()
    want = savedmodel_outputs(string_table.model, rows)
    # the plain LiteRT interpreter has no Flex delegate: running at all means builtins only
    runner = litert.signature_runner(litert.load_interpreter(contents[mode], 1), "serving_raw")
    got = litert.run(runner, rows, fills=prepared.feeding.fills)
    sure = confident(want["probabilities"])
    assert sure[known_colour(rows)].mean() >= 0.9  # the comparison covers them
    np.testing.assert_array_equal(got["class_ids"][sure], want["class_ids"][sure])
    # float32 matches closely; float16 and dynamic-range weights round to ~3 significant
    # digits, so their probabilities move by up to ~1e-2 depending on the trained weights
    tolerance = {"none": 1e-4, "float16": 1e-2, "dynamic": 1e-2}.get(mode, 0.12)
    assert np.abs(got["probabilities"] - want["probabilities"]).max() < tolerance
    assert list(got["classes"][sure]) == list(want["classes"][sure])


@pytest.mark.parametrize("mode", FLOAT_MODES)
def test_float_modes_impute_a_nan_inside_the_model(converted, mode):
    prepared, contents = converted
    rows = probe_rows()
    runner = litert.signature_runner(litert.load_interpreter(contents[mode], 1), "serving_raw")
    raw = litert.run(runner, rows)  # NaN fed as it is
    filled = litert.run(runner, rows, fills=prepared.feeding.fills)
    assert np.isnan(rows["x"]).any()
    # float16 keeps the fill as a float16 constant: equal up to its rounding
    np.testing.assert_allclose(raw["probabilities"], filled["probabilities"], atol=1e-4)


def test_integer_io_takes_int8_floats_and_raw_strings(converted):
    prepared, contents = converted
    runner = litert.signature_runner(litert.load_interpreter(contents["int8_io"], 1),
                                     "serving_raw")
    details = litert.io_details(runner)["inputs"]
    assert details["colour"]["dtype"] == "string"
    assert details["x"]["dtype"] == "int8" and details["x"]["quantization"]["scale"] > 0
    described = tflite_feeding.describe("x", details["x"], "int8", prepared.feeding)["missing"]
    q = details["x"]["quantization"]
    assert described["feed"] == round(described["fill"] / q["scale"] + q["zero_point"])


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("shape", [(6,), (3, 2)])
def test_bincount_rewrite_counts_like_tensorflow(binary, shape):
    import tensorflow as tf

    values = np.array([0, 3, 3, 1, 7, 2], np.int64).reshape(shape)  # 7 is beyond the size

    @tf.function(input_signature=[tf.TensorSpec(shape, tf.int64)])
    def count(x):
        return tf.math.bincount(x, minlength=5, maxlength=5, axis=-1, binary_output=binary)

    want = count(values).numpy()
    graph_def = count.get_concrete_function().graph.as_graph_def()
    assert rewrite_bincounts(graph_def)
    assert "DenseBincount" not in {n.op for n in graph_def.node}
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    inputs = [n.name for n in graph_def.node if n.op == "Placeholder"]
    output = next(n.input[0] for n in graph_def.node if n.op == "Identity")
    run = wrapped.prune([wrapped.graph.get_tensor_by_name(f"{inputs[0]}:0")],
                        wrapped.graph.get_tensor_by_name(output if ":" in output
                                                         else f"{output}:0"))
    np.testing.assert_array_equal(run(tf.constant(values)).numpy(), want)


def test_fill_gaps_and_the_signature_round_trip():
    values = np.array([[1.0, np.nan], [np.nan, 4.0]], np.float32)
    np.testing.assert_array_equal(missing.fill_gaps(values, np.array([7.0, 8.0])),
                                  [[1.0, 8.0], [7.0, 4.0]])
    np.testing.assert_array_equal(missing.fill_gaps(values, np.float32(0.5)),
                                  [[1.0, 0.5], [0.5, 4.0]])
    strings = np.array([b"", b"a"], object)
    assert missing.fill_gaps(strings, np.float32(1)) is strings
    feeding = tflite_feeding.Feeding({"x": np.float32(0.1)}, {}, {}, {})
    entry = {"dtype": "float32", "shape": [-1]}
    entry.update(tflite_feeding.describe("x", entry, "none", feeding))
    assert entry["missing"]["feed"] == "NaN" and entry["missing"]["fill"] == 0.1
    calibrated = tflite_feeding.describe("x", {"dtype": "float32"}, "int8", feeding)
    assert calibrated["missing"]["feed"] == 0.1
    fills = missing.fills_from_signature({"inputs": {"x": entry}})
    assert fills["x"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="does not fit"):
        missing.fill_gaps(values, np.array([1.0, 2.0, 3.0]))
