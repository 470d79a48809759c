"""export_tflite on a model with a Unicode string feature and an imputed float feature: the
LiteRT gate passes, signature.json says how strings and gaps are fed, and an app that follows
it (LiteRT's own Interpreter, nothing of tfkfp) gets the SavedModel's answers on rows with
NaNs, empty and unknown strings."""

import json
import os

import numpy as np
import pytest
from string_tables import COLOURS, confident, known_colour, probe_rows, savedmodel_outputs

from tfkfp.components.export_tflite.core import export_tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def int8_bundle(string_table, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("strings_int8") / "bundle")
    export_tflite(string_table.model, string_table.dataset, out, quantization="int8",
                  integer_io=True, calibration_examples=100)
    return out


def _signature(bundle):
    return json.load(open(os.path.join(bundle, "signature.json"), encoding="utf-8"))


def app_predict(bundle, rows):
    """What an app does with the bundle: signature.json's rules, then LiteRT. The float
    column x comes packed: a [rows, 1] block whose gap feeds are listed column by column."""
    from ai_edge_litert.interpreter import Interpreter

    inputs = _signature(bundle)["inputs"]
    runner = Interpreter(model_path=os.path.join(bundle, "model.tflite")).get_signature_runner(
        "serving_raw")
    feed = {}
    for name, spec in inputs.items():
        if spec["dtype"] == "string":  # raw UTF-8, a gap is the empty string
            feed[name] = np.array(rows[spec["column"]], dtype=object)
            continue
        values = np.stack([rows[c] for c in spec["columns"]], axis=1)
        gap = np.array(spec["missing"]["feed"], dtype=object)
        gap = np.where(gap == "NaN", np.nan, gap).astype(np.float64)
        q = spec.get("quantization")
        if q and spec["dtype"] == "int8":
            quantized = np.round(values / q["scale"] + q["zero_point"])
            filled = np.where(np.isnan(values), gap, quantized)
            feed[name] = np.clip(filled, -128, 127).astype(np.int8)
        else:
            feed[name] = np.where(np.isnan(values), gap, values).astype(np.float32)
    out = runner(**feed)["probabilities"]
    q = _signature(bundle)["outputs"]["probabilities"].get("quantization")
    return (out.astype(np.float32) - q["zero_point"]) * q["scale"] if q else out


def test_signature_json_says_how_strings_and_gaps_are_fed(int8_bundle, string_table):
    inputs = _signature(int8_bundle)["inputs"]
    colour, x = inputs["colour"], inputs["floats"]
    assert x["columns"] == ["x"]
    assert colour["dtype"] == "string" and "UTF-8" in colour["encoding"]
    assert colour["lookup"]["vocabulary"] == sorted(COLOURS)  # commas, quotes, Unicode kept
    assert colour["lookup"]["out_of_vocabulary_index"] == 0
    assert colour["missing"]["feed"] == ""
    assert x["dtype"] == "int8"
    assert x["missing"]["fill"] == [pytest.approx(string_table.fill, abs=1e-6)]
    q = x["quantization"]
    assert x["missing"]["feed"] == [round(string_table.fill / q["scale"] + q["zero_point"])]
    validation = json.load(open(os.path.join(int8_bundle, "validation.json")))
    assert validation["agreement"] >= 0.98


def test_an_app_following_signature_json_matches_the_savedmodel_on_gaps(int8_bundle,
                                                                        string_table):
    rows = probe_rows()
    want = savedmodel_outputs(string_table.model, rows)
    got = app_predict(int8_bundle, rows)
    sure = confident(want["probabilities"])
    assert sure[known_colour(rows)].mean() >= 0.9
    np.testing.assert_array_equal(got.argmax(1)[sure], want["class_ids"][sure])
    assert np.abs(got - want["probabilities"]).max() < 0.12


def test_a_float_bundle_takes_nan_for_a_gap(string_table, tmp_path):
    out = str(tmp_path / "bundle")
    export_tflite(string_table.model, string_table.dataset, out, quantization="none")
    assert _signature(out)["inputs"]["floats"]["missing"]["feed"] == ["NaN"]
    rows = probe_rows()
    want = savedmodel_outputs(string_table.model, rows)
    np.testing.assert_allclose(app_predict(out, rows), want["probabilities"], atol=1e-5)
