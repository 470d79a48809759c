"""Scenario: batch prediction. ``python -m benchmarks.prediction [--quick | --smoke]``.

The model is a 32-256-256-10 MLP over the benchmark table's 32 float columns, exported as
a tfkfp SavedModel. Ours (batch_predict: read + parse + predict + write JSON Lines, from
TFRecord shards in the default ``packed`` layout; the same rows one feature per column are
predicted beside it) against, on the same rows:

- a per-example ``model.predict`` loop (timed on a small sample; its rate extrapolates),
- a per-example ``model(x)`` loop (likewise),
- ``model.predict`` on the whole table already in memory with a large batch (no reading,
  parsing or writing: the model's ceiling),
- the raw read of the same shards (no parsing, one pipeline) followed by that in-memory
  predict, one after the other: what a reader that must read the files, and does not
  overlap reading with predicting, could reach,

and the TFLite int8 model (dynamic-range quantized, LiteRT with several threads) against
the SavedModel, both through batch_predict. Targets: >= 1000x the per-example predict loop,
>= 0.8x the in-memory large-batch run. batch_predict's own stage timing (busy seconds of
read+parse, the model and format+write, and the model's waits) is printed beside them: it
says which stage bounds the run.
"""

import logging
import os
import sys
import time
from typing import Dict, List, Tuple

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import data
from benchmarks.harness import Record, best_rates, load_average, table_main

BATCH = 8192
PREDICT_SAMPLE = 200  # rows for the per-example model.predict loop
CALL_SAMPLE = 2000  # rows for the per-example model(x) loop


def build_model(dataset_dir: str, model_dir: str, hidden: Tuple[int, ...] = (256, 256),
                batch_size: int = 1024):
    """An MLP over the Dataset's float columns (32-256-256-10 by default), briefly trained
    and exported with both tfkfp signatures; returns the tf_keras model."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema.load(dataset_dir)
    tf_keras.utils.set_random_seed(0)
    inputs = {c.name: tf_keras.Input(shape=(), name=c.name, dtype=tf.float32)
              for c in schema.features}
    x = tf_keras.layers.Concatenate()([tf_keras.layers.Reshape((1,))(v)
                                       for v in inputs.values()])
    for units in hidden:
        x = tf_keras.layers.Dense(units, activation="relu")(x)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(10, activation="softmax")(x))
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(make_dataset(dataset_dir, batch_size=batch_size).take(20), epochs=1, verbose=0)
    export_model(model, schema, model_dir)
    return model


def in_memory_table(csv_path: str) -> Dict[str, np.ndarray]:
    table = np.loadtxt(csv_path, delimiter=",", skiprows=1, dtype=np.float32)
    return {f"f{i:02d}": np.ascontiguousarray(table[:, i]) for i in range(data.FLOAT_COLUMNS)}


def tflite_int8(model_dir: str, features: Dict[str, np.ndarray], bundle: str) -> str:
    """The SavedModel's serving_raw converted with int8 weights (dynamic range)."""
    import shutil

    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_saved_model(model_dir,
                                                         signature_keys=["serving_raw"])
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    os.makedirs(bundle, exist_ok=True)
    with open(os.path.join(bundle, "model.tflite"), "wb") as f:
        f.write(converter.convert())
    shutil.copy(os.path.join(model_dir, "assets", "labels.txt"), bundle)
    return bundle


def per_example_loop(fn, features: Dict[str, np.ndarray], rows: int,
                     budget_s: float = 5.0) -> int:
    """Predict rows one at a time, up to ``rows`` or ``budget_s`` seconds; rows done."""
    started = time.perf_counter()
    for i in range(rows):
        fn({n: v[i:i + 1] for n, v in features.items()})
        if time.perf_counter() - started > budget_s:
            return i + 1
    return rows


def raw_read(shards: List[str]) -> int:
    """Every record of the shards as batched raw bytes through one pipeline, not parsed;
    records read. (A pipeline per shard would add its start, some 10-15 ms, per shard.)"""
    import tensorflow as tf

    count = 0
    for batch in tf.data.TFRecordDataset(shards, buffer_size=1 << 20).batch(BATCH).prefetch(2):
        count += int(batch.shape[0])
    return count


def print_stages(label: str, stages: Dict) -> None:
    """One line of batch_predict's stage timing (one run): which stage bounds the run."""
    print(f"  {label}: read+parse {stages['read']:.2f}, model {stages['predict']:.2f}, "
          f"format+write {stages['write']:.2f}; bound by {stages['bound_by']}; the model "
          f"waited {stages['wait_input']:.2f} s for input and {stages['wait_writer']:.2f} s "
          "for the writer", flush=True)


def run(csv_path: str, work: str, repeats: int, smoke: bool = False) -> List[Record]:
    """The records above; ``smoke``: the per-example loops on a few rows only."""
    from tfkfp.components.batch_predict.core import batch_predict
    from tfkfp.components.common.model.predictor import load_predictor

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    model_dir = os.path.join(work, "model")
    dataset_dir, columns_dir, blocks_dir = data.shard_layouts(csv_path, work, "pred-dataset",
                                                              8).values()
    model = build_model(dataset_dir, model_dir)
    features = in_memory_table(csv_path)
    rows = len(features["f00"])
    call_sample, predict_sample = (20, 5) if smoke else (CALL_SAMPLE, PREDICT_SAMPLE)
    saved = load_predictor(model_dir)
    lite = load_predictor(tflite_int8(model_dir, features, os.path.join(work, "lite")))

    def ours(predictor, name: str, shards: str = dataset_dir) -> int:
        return batch_predict(model_dir, shards, os.path.join(work, name),
                             predict_batch_size=BATCH, predictor=predictor).inputs

    from tfkfp.components.common.data.dataset import Manifest

    manifest = Manifest.load(dataset_dir)
    shard_files = [f for split in manifest.splits for f in manifest.shard_files(split)]

    def ceiling() -> int:
        raw_read(shard_files)
        return len(model.predict(features, batch_size=BATCH, verbose=0))

    print("batch prediction", flush=True)
    load = load_average()
    rates = best_rates({
        "tfkfp batch_predict (SavedModel)": lambda: ours(saved, "out-saved"),
        "tfkfp batch_predict (SavedModel, columns)": lambda: ours(saved, "out-columns",
                                                                 columns_dir),
        "tfkfp batch_predict (SavedModel, blocks)": lambda: ours(saved, "out-blocks",
                                                                blocks_dir),
        "tfkfp batch_predict (TFLite int8)": lambda: ours(lite, "out-lite"),
        "model.predict in memory": lambda: len(model.predict(features, batch_size=BATCH,
                                                             verbose=0)),
        "raw read + model.predict in memory": ceiling,
        "per-example model(x)": lambda: per_example_loop(
            lambda x: model(x, training=False), features, min(call_sample, rows)),
        "per-example model.predict": lambda: per_example_loop(
            lambda x: model.predict(x, verbose=0), features, min(predict_sample, rows)),
    }, repeats)
    mine = rates["tfkfp batch_predict (SavedModel)"]
    for label, shards, out in (
            ("batch_predict stages (busy seconds, one run)", dataset_dir, "out-stages"),
            ("the same, blocks shards", blocks_dir, "out-stages-blocks")):
        print_stages(label, batch_predict(model_dir, shards, os.path.join(work, out),
                                          predict_batch_size=BATCH, predictor=saved).stages)
    return [
        Record("batch_predict", "rows/s", mine, "per-example model.predict loop",
               rates["per-example model.predict"], 1000.0, load),
        Record("batch_predict", "rows/s", mine, "per-example model(x) loop",
               rates["per-example model(x)"], None, load),
        Record("batch_predict", "rows/s", mine, f"model.predict in memory (batch {BATCH})",
               rates["model.predict in memory"], 0.8, load),
        Record("batch_predict", "rows/s", mine, "raw read of the shards, then model.predict "
               "in memory", rates["raw read + model.predict in memory"],
               None, load),
        Record("batch_predict columns", "rows/s",
               rates["tfkfp batch_predict (SavedModel, columns)"],
               f"model.predict in memory (batch {BATCH})", rates["model.predict in memory"],
               None, load),
        Record("batch_predict blocks", "rows/s",
               rates["tfkfp batch_predict (SavedModel, blocks)"],
               f"model.predict in memory (batch {BATCH})", rates["model.predict in memory"],
               0.8, load),
        Record("batch_predict blocks", "rows/s",
               rates["tfkfp batch_predict (SavedModel, blocks)"], "the packed shards (same run)",
               mine, None, load),
        Record("batch_predict_tflite", "rows/s", rates["tfkfp batch_predict (TFLite int8)"],
               "same, SavedModel path", mine, None, load),
    ]


def main(argv=None) -> int:
    return table_main("python -m benchmarks.prediction", argv, 200_000, "best", run)


if __name__ == "__main__":
    sys.exit(main())
