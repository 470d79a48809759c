"""The quantization mode table is the one place a mode name gets its meaning: every component
checks a name with one validator (one error class naming the allowed values), a new entry is
swept, calibrated and checked by what the table says, and no other module branches on a
mode's name."""

import ast
import dataclasses
import pathlib

import numpy as np
import pytest

from tfkfp.components.common.tflite import feeding as tflite_feeding
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.modes import MODES, QuantizationModeError
from tfkfp.components.export_tflite.options import ExportOptions
from tfkfp.components.freeze_quantize.options import QuantizeOptions

COMPONENTS = pathlib.Path(__file__).resolve().parents[4] / "components"
# The modules that act on a mode: they read its table entry, never its name.
READERS = ("common/tflite/convert.py", "common/tflite/feeding.py", "freeze_quantize/core.py",
           "freeze_quantize/result.py", "export_tflite/core.py")


@pytest.fixture
def int8_copy(monkeypatch):
    """A mode no module names, converting exactly as int8 does (calibrated, integer
    activations, integer_io allowed), registered at the end of the table."""
    entry = dataclasses.replace(MODES["int8"], name="int8_copy", does="int8, once more")
    monkeypatch.setitem(MODES, "int8_copy", entry)
    return entry


def check_quantize(quantization, calibration_examples, eval_examples, **settings):
    return QuantizeOptions(quantization=quantization, calibration_examples=calibration_examples,
                           eval_examples=eval_examples, **settings)


def check_export(quantization, quantized_dir, eval_examples, min_agreement):
    return ExportOptions(quantization=quantization, quantized_dir=quantized_dir,
                         eval_examples=eval_examples, min_agreement=min_agreement)


def test_the_table_is_keyed_by_name_and_in_sweep_order():
    assert list(MODES) == ["none", "dynamic", "float16", "int8", "int16x8"]
    for name, mode in MODES.items():
        assert mode.name == name and mode.does and "\n" not in mode.does
    assert [m for m in MODES if MODES[m].calibrated] == ["int8", "int16x8"]
    assert [m for m in MODES if MODES[m].integer_io] == ["int8"]
    assert [m for m in MODES if not MODES[m].quantized] == ["none"]
    assert tflite_modes.AUTO not in MODES


@pytest.mark.parametrize("check", [
    lambda name: tflite_modes.check_mode(name),
    lambda name: check_quantize(name, 1, 1),
    lambda name: check_export(name, "", 1, 0.5),
], ids=["check_mode", "freeze_quantize", "export_tflite"])
def test_every_component_refuses_an_unknown_mode_with_one_error_naming_the_allowed(check):
    with pytest.raises(QuantizationModeError, match="^quantization 'int4' is not one of none, "
                       "dynamic, float16, int8, int16x8, auto$"):
        check("int4")


def test_the_error_is_a_quantize_input_error_and_auto_is_no_mode():
    assert issubclass(QuantizationModeError, QuantizeInputError)
    assert issubclass(QuantizationModeError, ValueError)  # pipelines' checks catch these
    with pytest.raises(QuantizationModeError, match="'auto' is not one of none, .*, int16x8$"):
        tflite_modes.get("auto")
    with pytest.raises(QuantizationModeError, match=r"modes \['int8', 'int4'\]: 'int4' not a "
                       "mode; expected some of none, dynamic, float16, int8, int16x8 "
                       r"\(none: the default for the model's kind\)$"):
        tflite_modes.check_sweep(["int8", "int4"])
    assert tflite_modes.check_sweep(["int8", "none"]) == ("none", "int8")  # table order
    assert tflite_modes.check_sweep([]) == tflite_modes.check_sweep(None) == ()  # default


@pytest.mark.parametrize("check", [
    lambda: check_quantize("auto", 1, 1, modes=["int4"]),
    lambda: check_quantize("auto", 1, 1, sweep_seconds=-1.0),
    lambda: check_quantize("auto", 1, 1, sweep_seconds=float("nan")),
    lambda: check_quantize("int8", 1, 1, modes=["int8", "none"]),
], ids=["unknown mode", "negative budget", "NaN budget", "modes without auto"])
def test_freeze_quantize_refuses_a_bad_sweep_before_loading_anything(check):
    with pytest.raises(QuantizeInputError, match="modes|sweep_seconds"):
        check()


def test_a_cnn_sweeps_by_default_every_mode_but_int16x8_and_says_why():
    swept, left_out = tflite_modes.default_sweep({"Conv2D", "Relu", "MatMul"})
    assert swept == ("none", "dynamic", "float16", "int8")
    assert list(left_out) == ["int16x8"]
    assert "the model has Conv2D" in left_out["int16x8"]
    assert "name int16x8 in modes to sweep it" in left_out["int16x8"]
    swept, left_out = tflite_modes.default_sweep({"DepthwiseConv2dNative"})
    assert "int16x8" not in swept and "DepthwiseConv2dNative" in left_out["int16x8"]


def test_a_dense_model_sweeps_every_mode_by_default():
    assert tflite_modes.default_sweep({"MatMul", "BiasAdd", "Softmax"}) == (tuple(MODES), {})


def test_no_reader_branches_on_a_mode_name():
    """A comparison with a mode's name (``mode == "int8"``, ``mode in ("int8", ...)``) in a
    module that acts on modes would decide outside the table."""
    for rel in READERS:
        tree = ast.parse((COMPONENTS / rel).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            named = {n.value for side in (node.left, *node.comparators) for n in ast.walk(side)
                     if isinstance(n, ast.Constant) and n.value in MODES}
            assert not named, f"{rel}:{node.lineno} compares with mode name(s) {named}"


def test_a_mode_added_to_the_table_is_checked_and_fed_by_its_entry(int8_copy):
    assert tflite_modes.check_mode("int8_copy") == "int8_copy"
    check_quantize("int8_copy", 1, 1)
    check_export("int8_copy", "", 1, 0.5)
    assert tflite_modes.default_sweep({"MatMul"})[0][-1] == "int8_copy"  # swept by default
    with pytest.raises(QuantizationModeError, match="int16x8, int8_copy, auto$"):
        tflite_modes.check_mode("int4")
    feeding = tflite_feeding.Feeding({"x": np.float32(0.5)}, {}, {}, {})
    missing = tflite_feeding.describe("x", {"dtype": "float32"}, "int8_copy", feeding)
    assert missing["missing"]["feed"] == 0.5  # integer activations: feed the fill, not NaN


@pytest.mark.slow
def test_freeze_quantize_sweeps_a_mode_added_to_the_table(int8_copy, demo_model, demo_dataset,
                                                          tmp_path):
    from tfkfp.components.common.tflite.parity import Timing
    from tfkfp.components.freeze_quantize.core import freeze_quantize

    result = freeze_quantize(demo_model, demo_dataset, str(tmp_path / "tflite"),
                             str(tmp_path / "frozen"), modes=("int8", "int8_copy"),
                             calibration_examples=50, eval_examples=100,
                             max_accuracy_drop=0.5, timing=Timing(16, 2))
    assert [f.mode for f in result.figures] == ["int8", "int8_copy"] and not result.skipped
    int8, copy = result.figures
    assert copy.size_bytes == int8.size_bytes  # calibrated and converted as int8 is
    assert copy.agreement == int8.agreement
