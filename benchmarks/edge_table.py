"""Scenario: a tabular model's TFLite bundle, one input per column against packed inputs.

The 30-column breast-cancer table (scikit-learn's ``load_breast_cancer``: ``pip install
scikit-learn``, which tfkfp does not install) is sharded, a tfkfp MLP is trained on it
(train's defaults: dense layers of 256 and 128, about 41k weights) and exported by
export_tflite in ``none`` and ``int8``, once with
``input_layout="columns"`` (one input per column, as every bundle was before) and once with
``"packed"`` (one float32 ``[batch, 30]`` input, the per-column preprocessing run once per
block). For each bundle: the file's size, its op count, and the LiteRT latency of one row
(median of many one-row calls through a signature runner, one thread). Targets: the packed
int8 file at most 0.35x its float file; one packed row no slower than one per-column row.

``python -m benchmarks --only edge_table`` (``--smoke``: one epoch, a few latency calls).
"""

import logging
import os
import statistics
import time
from typing import Dict, List

import numpy as np

from benchmarks.harness import load_average
from benchmarks.quantization import AtMost

INT8_TARGET = 0.35  # int8 file / float file, packed layout, at most
LATENCY_TARGET = 1.0  # one packed row's LiteRT latency / one per-column row's, at most
LAYOUTS = ("columns", "packed")
MODES = ("none", "int8")
CALLS = 2000


def write_table(folder: str) -> str:
    """The breast-cancer table as CSV: id, 30 float columns, the class name."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    frame["target"] = frame["target"].map({0: "malignant", 1: "benign"})
    path = os.path.join(folder, "breast_cancer.csv")
    frame.to_csv(path, index_label="id")
    return path


def op_count(content: bytes) -> int:
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    return sum(len(g.operators) for g in model.subgraphs)


def row_latency_us(bundle: str, features: Dict[str, np.ndarray], calls: int = CALLS) -> float:
    """Median microseconds of one-row calls, fed as the bundle's signature.json says."""
    from tfkfp.components.common.model.bundle import Bundle
    from tfkfp.components.common.tflite import litert

    signature = Bundle(bundle).signature()
    runner = litert.signature_runner(
        litert.load_interpreter(os.path.join(bundle, "model.tflite"), 1), signature["signature"])
    feed = {}
    for name, spec in signature["inputs"].items():
        columns = spec.get("columns") or [spec["column"]]
        values = np.stack([features[c][:1] for c in columns], axis=1)
        feed[name] = values if "columns" in spec else values[:, 0]
    feed = {k: v.astype(signature["inputs"][k]["dtype"]) for k, v in feed.items()}
    runner(**feed)  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        runner(**feed)
        times.append(time.perf_counter() - started)
    return 1e6 * statistics.median(times)


def run(work: str, smoke: bool = False) -> List:
    from tfkfp.components.export_tflite.core import export_tflite
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.train.core import train

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    dataset = shard_tfrecords(write_table(work), os.path.join(work, "bc-dataset"),
                              label="target", keys=["id"]).dataset
    model = os.path.join(work, "bc-model")
    train(dataset, model, epochs=1 if smoke else 5, seed=1)
    features = _row_features(dataset)
    found = {}
    for layout in LAYOUTS:
        for mode in MODES:
            out = os.path.join(work, f"bc-{layout}-{mode}")
            result = export_tflite(model, dataset, out, quantization=mode,
                                   calibration_examples=100, input_layout=layout)
            with open(os.path.join(out, "model.tflite"), "rb") as f:
                content = f.read()
            found[layout, mode] = dict(bytes=len(content), ops=op_count(content),
                                       us=row_latency_us(out, features, 20 if smoke else CALLS),
                                       accuracy=result.figures.accuracy)
    _print(found)
    load = load_average()
    packed, columns = (found["packed", m] for m in MODES), (found["columns", m] for m in MODES)
    (p_float, p_int8), (c_float, c_int8) = packed, columns
    return [AtMost("edge_table_int8", "int8 / float (packed)", p_int8["bytes"],
                   "float (packed)", p_float["bytes"], INT8_TARGET, load),
            AtMost("edge_table_int8", "int8 / float (columns)", c_int8["bytes"],
                   "float (columns)", c_float["bytes"], None, load),
            AtMost("edge_table_row_int8", "us per row (packed)", p_int8["us"],
                   "per-column bundle", c_int8["us"], LATENCY_TARGET, load),
            AtMost("edge_table_row_float", "us per row (packed)", p_float["us"],
                   "per-column bundle", c_float["us"], LATENCY_TARGET, load)]


def _row_features(dataset: str) -> Dict[str, np.ndarray]:
    from tfkfp.components.common.tflite import inputs as tflite_inputs

    schema = tflite_inputs.dataset_schema(dataset)
    names = [c.name for c in schema.features]
    return tflite_inputs.load_examples(dataset, "eval", 1, names, "latency").features


def _print(found: Dict) -> None:
    print(f"\n  {'layout':<9}{'mode':<6}{'bytes':>9}{'int8/float':>11}{'ops':>5}"
          f"{'us/row':>8}{'accuracy':>10}")
    for (layout, mode), f in found.items():
        ratio = f["bytes"] / found[layout, "none"]["bytes"]
        print(f"  {layout:<9}{mode:<6}{f['bytes']:>9,}{ratio:>10.3f}x{f['ops']:>5}"
              f"{f['us']:>8.1f}{f['accuracy']:>10.4f}")
