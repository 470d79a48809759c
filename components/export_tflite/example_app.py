"""Predict one row with an exported ``model.tflite`` and nothing but LiteRT, as an app would.

Everything the app needs is inside the model file, in its ``tfkfp.app.json`` metadata
(common.tflite.metadata), read here with LiteRT's own flatbuffer reader: the signature to
call, the column each input takes (a packed input: its columns, in order), its dtype and
what to feed for a gap, and the class names. No tfkfp import, no file beside the model::

    python example_app.py bundle/model.tflite '{"mean_radius": 14.2, "texture": null}'

prints the answer as JSON (``{"class": "benign", "scores": [...]}``, or ``{"value": ...}``).
"""

import json
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.tools.flatbuffer_utils import read_model_from_bytearray


def app_metadata(content: bytes) -> dict:
    """The model file's ``tfkfp.app.json`` metadata."""
    model = read_model_from_bytearray(bytearray(content))
    entry = next(m for m in model.metadata if m.name.decode() == "tfkfp.app.json")
    return json.loads(bytes(model.buffers[entry.buffer].data))


def feed(row: dict, spec: dict) -> np.ndarray:
    """The one-row tensor an input takes from a row (column -> value): a packed input (one
    with "columns") its columns' values in that order, any other input its column's."""
    if "columns" in spec:
        values = [row.get(column) for column in spec["columns"]]
        return values_of(values, spec["missing"]["feed"], spec)[None, :]
    return values_of([row.get(spec["column"])], [spec["missing"]["feed"]], spec)


def values_of(values: list, gap_feeds: list, spec: dict) -> np.ndarray:
    """Values as the input's dtype: a gap (None) as what the metadata says to feed for it
    (already quantized for a quantized input), a value of a quantized input quantized."""
    if spec["dtype"] == "string":
        return np.array([str(g if v is None else v).encode()
                         for v, g in zip(values, gap_feeds)], dtype=object)
    quantization = spec.get("quantization")
    out = []
    for value, gap in zip(values, gap_feeds):
        if value is None:
            out.append(gap)
        elif quantization and spec["dtype"] != "float32":
            info = np.iinfo(spec["dtype"])  # a value beyond the calibrated range saturates
            out.append(np.clip(np.round(float(value) / quantization["scale"]
                                        + quantization["zero_point"]), info.min, info.max))
        else:
            out.append(value)
    return np.array(out, dtype=np.float64).astype(spec["dtype"])


def read(outputs: dict, name: str, app: dict) -> np.ndarray:
    """One output of the row, dequantized where the model's outputs are int8."""
    values = np.ravel(outputs[name]).astype(np.float64)
    quantization = app["outputs"][name].get("quantization")
    if quantization and app["outputs"][name]["dtype"] != "float32":
        values = (values - quantization["zero_point"]) * quantization["scale"]
    return values


def predict_one(model_path: str, row: dict) -> dict:
    """A tfkfp model's answer for one row (column -> value): its class, or its value."""
    with open(model_path, "rb") as f:
        content = f.read()
    app = app_metadata(content)
    runner = Interpreter(model_content=content).get_signature_runner(app["signature"])
    outputs = runner(**{name: feed(row, spec) for name, spec in app["inputs"].items()})
    if app["task"] == "regression":
        return {"value": float(read(outputs, "value", app)[0])}
    scores = read(outputs, "probabilities", app)
    return {"class": app["labels"][int(np.argmax(scores))], "scores": scores.tolist()}


if __name__ == "__main__":
    print(json.dumps(predict_one(sys.argv[1], json.loads(sys.argv[2]))))
