"""Packed inputs (the default layout) against one input per column, on a table with floats
holding gaps, whole numbers and a string, interleaved: the bundle takes a float32 block, an
int32 block and the string, records their columns in order, answers as the per-column
bundle does through the Predictor, batch_predict and the example app, and its graph
normalises once per block."""

import glob
import json
import os

import numpy as np
import pytest
from mixed_table import probe_rows

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.model.predictor import FLOAT_BLOCK, INT64_BLOCK, load_predictor
from tfkfp.components.common.tflite import metadata as tflite_metadata
from tfkfp.components.common.tflite.options import QuantizeInputError
from tfkfp.components.export_tflite import example_app
from tfkfp.components.export_tflite.core import export_tflite
from tfkfp.components.freeze_quantize.core import freeze_quantize

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundles(mixed_table, loose_gate, tmp_path_factory):
    """{(layout, mode): bundle folder} for both layouts in none and int8."""
    out = tmp_path_factory.mktemp("packed")
    found = {}
    for layout in ("packed", "columns"):
        for mode in ("none", "int8"):
            folder = str(out / f"{layout}-{mode}")
            export_tflite(mixed_table.model, mixed_table.dataset, folder, quantization=mode,
                          calibration_examples=200, input_layout=layout, **loose_gate)
            found[layout, mode] = folder
    return found


def _json(bundle, name="signature.json"):
    with open(os.path.join(bundle, name), encoding="utf-8") as f:
        return json.load(f)


def _model(bundle):
    with open(os.path.join(bundle, "model.tflite"), "rb") as f:
        return f.read()


def test_the_bundle_takes_one_block_per_dtype_and_records_its_columns(bundles):
    signature = _json(bundles["packed", "none"])
    inputs = signature["inputs"]
    assert sorted(inputs) == ["colour", "floats", "ints"]
    assert (inputs["floats"]["dtype"], inputs["floats"]["shape"]) == ("float32", [-1, 3])
    assert (inputs["ints"]["dtype"], inputs["ints"]["shape"]) == ("int32", [-1, 2])
    assert inputs["floats"]["columns"] == ["f_a", "f_b", "f_c"]  # the schema's order
    assert inputs["ints"]["columns"] == ["n_a", "n_b"]
    assert inputs["colour"]["column"] == "colour" and inputs["colour"]["dtype"] == "string"
    gaps = inputs["floats"]["missing"]
    assert gaps["feed"] == ["NaN"] * 3 and all(isinstance(f, float) for f in gaps["fill"])
    assert inputs["ints"]["missing"]["fill"] == [None, None]  # whole numbers: no gaps
    app = tflite_metadata.read(_model(bundles["packed", "none"]))
    assert app["inputs"] == inputs and app["input_order"] == signature["input_order"]
    assert sorted(_json(bundles["columns", "none"])["inputs"]) == [
        "colour", "f_a", "f_b", "f_c", "n_a", "n_b"]


def test_the_packed_graph_normalises_once_per_block(bundles):
    from ai_edge_litert.tools import flatbuffer_utils

    def ops(bundle):
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(_model(bundle)))
        codes = [model.operatorCodes[op.opcodeIndex].builtinCode
                 for op in model.subgraphs[0].operators]
        return codes

    from ai_edge_litert import schema_py_generated as schema

    packed, columns = ops(bundles["packed", "none"]), ops(bundles["columns", "none"])
    sub = schema.BuiltinOperator.SUB
    assert packed.count(sub) == 2 and columns.count(sub) == 5  # per block, per column
    assert len(packed) < len(columns)
    for mode in ("none", "int8"):
        assert os.path.getsize(os.path.join(bundles["packed", mode], "model.tflite")) < \
            os.path.getsize(os.path.join(bundles["columns", mode], "model.tflite"))


@pytest.mark.parametrize("mode", ["none", "int8"])
def test_the_predictor_answers_as_with_the_per_column_bundle(bundles, mode):
    rows = probe_rows()
    packed = load_predictor(bundles["packed", mode])
    columns = load_predictor(bundles["columns", mode])
    assert packed.blocks == {"float32": ("f_a", "f_b", "f_c"), "int64": ("n_a", "n_b")}
    assert packed.inputs == columns.inputs  # both by column: the data need not know
    want = columns.predict(rows)
    np.testing.assert_allclose(packed.predict(rows), want, atol=1e-5 if mode == "none" else 0.06)
    # as the server hands them over: one matrix per block
    matrices = {FLOAT_BLOCK: np.stack([rows[c] for c in packed.blocks["float32"]], axis=1),
                INT64_BLOCK: np.stack([rows[c] for c in packed.blocks["int64"]], axis=1),
                "colour": rows["colour"]}
    np.testing.assert_array_equal(packed.predict(matrices), packed.predict(rows))


def test_a_whole_number_beyond_int32_is_refused_naming_its_column(bundles):
    from tfkfp.components.common.model.predictor import ModelInputError

    rows = probe_rows()
    rows["n_b"][4] = 2 ** 40
    with pytest.raises(ModelInputError, match=r"row 4, column 'n_b'.*input_layout 'columns'"):
        load_predictor(bundles["packed", "none"]).predict(rows)


def _predictions(folder):
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "predictions-*.jsonl"))):
        with open(path) as f:
            rows += [json.loads(line) for line in f]
    return sorted(rows, key=lambda r: r["id"])


def test_batch_predict_on_the_packed_bundle_writes_the_per_column_answers(
        bundles, mixed_table, tmp_path):
    got = {}
    for layout in ("packed", "columns"):
        out = str(tmp_path / layout)
        result = batch_predict(bundles[layout, "none"], mixed_table.dataset, out, top_k=2)
        assert result.errors == 0 and result.inputs == 1200
        got[layout] = _predictions(out)
    assert [r["id"] for r in got["packed"]] == [r["id"] for r in got["columns"]]
    assert [r["class_id"] for r in got["packed"]] == [r["class_id"] for r in got["columns"]]
    np.testing.assert_allclose([r["top_scores"] for r in got["packed"]],
                               [r["top_scores"] for r in got["columns"]], atol=1e-5)


@pytest.mark.parametrize("mode", ["none", "int8"])
def test_the_example_app_feeds_the_blocks_from_the_model_file_alone(bundles, mode, tmp_path):
    import shutil

    model = shutil.copy(os.path.join(bundles["packed", mode], "model.tflite"), tmp_path)
    rows = probe_rows()
    want = load_predictor(bundles["columns", mode]).predict(rows)
    for i in range(len(rows["f_a"])):
        row = {name: _value(values[i]) for name, values in rows.items()}
        got = example_app.predict_one(model, row)
        np.testing.assert_allclose(got["scores"], want[i], atol=1e-5 if mode == "none" else 0.06)


def _value(value):
    if isinstance(value, bytes):
        return value.decode()
    return None if np.isnan(value) else value.item()


def test_export_takes_freeze_quantize_s_layout_and_refuses_another(mixed_table, tmp_path):
    freeze_quantize(mixed_table.model, mixed_table.dataset, str(tmp_path / "tflite"),
                    str(tmp_path / "frozen"), quantization="dynamic", eval_examples=200)
    quantization = _json(str(tmp_path / "tflite"), "quantization.json")
    assert quantization["input_layout"] == "packed"
    assert quantization["blocks"]["ints"] == {"dtype": "int32", "inputs": ["n_a", "n_b"]}
    export_tflite(mixed_table.model, mixed_table.dataset, str(tmp_path / "bundle"),
                  quantized_dir=str(tmp_path / "tflite"), eval_examples=200)
    assert sorted(_json(str(tmp_path / "bundle"))["inputs"]) == ["colour", "floats", "ints"]
    with pytest.raises(QuantizeInputError, match="input_layout 'packed', not 'columns'"):
        export_tflite(mixed_table.model, mixed_table.dataset, str(tmp_path / "other"),
                      quantized_dir=str(tmp_path / "tflite"), input_layout="columns")
