"""What an app reads inside ``model.tflite``: the ``tfkfp.app.json`` metadata buffer, read
back with LiteRT's own flatbuffer reader, and the example app that predicts one row from
the model file alone (a copy with nothing beside it) with plain LiteRT."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from string_tables import COLOURS, confident, probe_rows, savedmodel_outputs

from tfkfp.components.common.tflite import metadata as tflite_metadata
from tfkfp.components.export_tflite import example_app
from tfkfp.components.export_tflite.core import export_tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundles(string_table, tmp_path_factory):
    """An int8 bundle with int8 inputs and outputs, and a float one, of the string table's
    model (a float column with gaps, a Unicode string column, two classes)."""
    out = tmp_path_factory.mktemp("app_metadata")
    export_tflite(string_table.model, string_table.dataset, str(out / "int8"),
                  quantization="int8", integer_io=True, calibration_examples=100)
    export_tflite(string_table.model, string_table.dataset, str(out / "none"),
                  quantization="none")
    return {mode: str(out / mode) for mode in ("int8", "none")}


def _read(bundle, name):
    with open(os.path.join(bundle, name), "rb") as f:
        return f.read()


def test_the_metadata_inside_the_model_is_read_back_by_litert(bundles):
    from ai_edge_litert.tools import flatbuffer_utils

    content = _read(bundles["int8"], "model.tflite")
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    entries = {m.name.decode(): m.buffer for m in model.metadata}
    assert tflite_metadata.APP_METADATA in entries  # beside the converter's own entries
    assert "min_runtime_version" in entries
    app = json.loads(bytes(model.buffers[entries[tflite_metadata.APP_METADATA]].data))
    signature = json.loads(_read(bundles["int8"], "signature.json"))
    labels = _read(bundles["int8"], "labels.txt").decode().splitlines()
    assert app["format"] == tflite_metadata.FORMAT
    assert app["labels"] == labels and len(labels) == 2
    assert app["task"] == "classification" and app["signature"] == "serving_raw"
    assert app["inputs"] == signature["inputs"] and app["outputs"] == signature["outputs"]
    assert app["input_order"] == signature["input_order"]
    assert sorted(app["input_order"]) == ["colour", "floats"]  # x packed, as one float block
    floats = app["inputs"]["floats"]
    assert floats["columns"] == ["x"] and floats["shape"] == [-1, 1]
    assert floats["dtype"] == "int8" and "quantization" in floats
    assert app["inputs"]["colour"]["lookup"]["vocabulary"] == sorted(COLOURS)
    assert tflite_metadata.read(content) == app


def test_a_converted_model_without_it_reads_as_none_and_embedding_replaces_it(bundles):
    content = _read(bundles["none"], "model.tflite")
    once = tflite_metadata.embed(content, {"labels": ["a"]})
    twice = tflite_metadata.embed(once, {"labels": ["b"]})
    assert tflite_metadata.read(twice) == {"format": tflite_metadata.FORMAT, "labels": ["b"]}
    from ai_edge_litert.tools import flatbuffer_utils

    names = [m.name.decode() for m in
             flatbuffer_utils.read_model_from_bytearray(bytearray(twice)).metadata]
    assert names.count(tflite_metadata.APP_METADATA) == 1


def _alone(bundle, tmp_path):
    """The model file copied where nothing else is: the app has only it."""
    folder = tmp_path / os.path.basename(bundle)
    folder.mkdir()
    return shutil.copy(os.path.join(bundle, "model.tflite"), folder / "model.tflite")


def _row(rows, i):
    x = float(rows["x"][i])
    return {"x": None if np.isnan(x) else x, "colour": rows["colour"][i].decode()}


@pytest.mark.parametrize("mode", ["none", "int8"])
def test_the_example_app_predicts_rows_with_gaps_from_the_model_file_alone(
        bundles, string_table, mode, tmp_path):
    model = _alone(bundles[mode], tmp_path)
    rows = probe_rows()
    want = savedmodel_outputs(string_table.model, rows)
    labels = _read(bundles[mode], "labels.txt").decode().splitlines()
    sure = confident(want["probabilities"])
    for i in range(len(rows["x"])):
        got = example_app.predict_one(str(model), _row(rows, i))
        tolerance = 1e-5 if mode == "none" else 0.12
        np.testing.assert_allclose(got["scores"], want["probabilities"][i], atol=tolerance)
        if mode == "none" or sure[i]:
            assert got["class"] == labels[int(want["class_ids"][i])]


def test_the_example_app_runs_as_a_script(bundles, string_table, tmp_path):
    model = _alone(bundles["none"], tmp_path)
    rows = probe_rows()
    want = savedmodel_outputs(string_table.model, rows)
    done = subprocess.run([sys.executable, example_app.__file__, str(model),
                           json.dumps(_row(rows, 0))], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(got["scores"], want["probabilities"][0], atol=1e-5)


def test_the_how_to_snippet_runs_on_a_float_bundle(bundles, tmp_path):
    """The few lines the how-to shows an app developer, run as they are."""
    import pathlib
    import re

    how_to = pathlib.Path(__file__).resolve().parents[3] / "docs/how-to/freezing-and-tflite.md"
    section = how_to.read_text().split("## What an app reads inside the model file")[1]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shutil.copy(os.path.join(bundles["none"], "model.tflite"), tmp_path / "model.tflite")
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    labels = _read(bundles["none"], "labels.txt").decode().splitlines()
    assert done.stdout.strip().splitlines()[-1] in labels
