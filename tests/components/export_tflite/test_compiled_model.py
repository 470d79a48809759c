"""The export gate runs the bundle through LiteRT's CompiledModel API as well as the
Interpreter: every output of a packed classifier (its string classes and int64 class ids
included, an int8 model one row a call), a bundle whose inputs CompiledModel cannot feed
(int64 columns) left to the Interpreter with the reason, CompiledModel's own figures held
to the gate."""

import json
import os

import numpy as np
import pytest

from tfkfp.components.common.tflite import compiled
from tfkfp.components.common.tflite.parity import Figures, Gate
from tfkfp.components.export_tflite.core import export_tflite


@pytest.fixture(scope="module")
def int8_bundle(demo_model, demo_dataset, loose_gate, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("compiled") / "bundle")
    return out, export_tflite(demo_model, demo_dataset, out, quantization="int8",
                              calibration_examples=100, eval_examples=200, **loose_gate)


def test_every_output_of_a_packed_int8_classifier_runs_in_compiled_model(int8_bundle):
    out, result = int8_bundle
    check = result.compiled
    assert check.skipped == ""
    assert check.outputs == ("class_ids", "classes", "probabilities")
    # both runtimes run int8 kernels on this CPU: at most one quantization step of a
    # probability apart (kernels may round differently), so at most a row's class differs
    assert check.max_abs_diff <= 1 / 256 + 1e-6
    assert abs(check.figures.accuracy - result.figures.accuracy) <= 1 / result.figures.examples
    assert check.figures.examples == result.figures.examples
    with open(os.path.join(out, "validation.json"), encoding="utf-8") as f:
        recorded = json.load(f)["compiled_model"]
    assert recorded["outputs"] == ["class_ids", "classes", "probabilities"]
    assert "Interpreter and CompiledModel: class_ids, classes, probabilities" in \
        result.markdown()


def test_int64_inputs_are_left_to_the_interpreter_naming_them(demo_model, demo_dataset,
                                                                tmp_path):
    result = export_tflite(demo_model, demo_dataset, str(tmp_path / "bundle"),
                           quantization="none", eval_examples=50, input_layout="columns")
    assert result.compiled.figures is None
    assert "(int64)" in result.compiled.skipped
    assert "float32, float16, int32, int8, uint8, bool" in result.compiled.skipped
    assert "CompiledModel: not run" in result.markdown()


class _Runner:
    def __init__(self, dtypes):
        self.dtypes = dtypes

    def get_input_details(self):
        return {name: {"dtype": dtype} for name, dtype in self.dtypes.items()}


def test_unsupported_inputs_names_each_and_its_dtype():
    found = compiled.unsupported_inputs(_Runner({"floats": np.float32, "colour": np.bytes_,
                                                 "count": np.int64, "ints": np.int32}))
    assert found.startswith("input(s) colour (string), count (int64):")
    assert compiled.unsupported_inputs(_Runner({"floats": np.float32, "ints": np.int32})) == ""


def test_compiled_model_figures_are_held_to_the_gate():
    constant = Figures("compiled_model", 10, 0.5, 0.9, 0.5, 1.0, 0.5, 20,
                       constant=("probabilities",))
    refused = compiled.failures(compiled.CompiledCheck(("probabilities",), figures=constant,
                                                       max_abs_diff=1.0), Gate())
    assert refused and all(r.startswith(f"in {compiled.RUNTIME}: ") for r in refused)
    assert any("the same for all 20 examples" in r for r in refused)
    assert compiled.failures(compiled.CompiledCheck(skipped="why"), Gate()) == []
