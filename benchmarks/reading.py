"""Scenario 2: reading and parsing the sharded table.

Ours (``make_dataset``) against pandas.read_csv to NumPy, against the naive
``map(parse_single_example)`` pipeline, and against the raw-bytes ceiling: the same
TFRecords read with the same interleave and batching, but not parsed.
"""

import logging
from typing import List

from benchmarks.harness import Record, best_rates, load_average

BATCH = 1024


def _consume(ds) -> int:
    rows = 0
    for features, _ in ds:
        rows += len(next(iter(features.values())).numpy())
    return rows


def ours(dataset_dir: str) -> int:
    from tfkfp.components.common.reader import make_dataset

    return sum(_consume(make_dataset(dataset_dir, mode="eval", split=split, batch_size=BATCH))
               for split in ("train", "eval"))


def naive(dataset_dir: str) -> int:
    import tensorflow as tf

    from tfkfp.components.common.dataset import split_files
    from tfkfp.components.common.reader import feature_spec
    from tfkfp.components.common.schema import Schema

    schema = Schema.load(dataset_dir)
    spec = feature_spec(schema, schema.columns)
    files = [f for s in ("train", "eval") for f in split_files(dataset_dir, s)[0]]
    ds = tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))
    ds = ds.batch(BATCH)
    return sum(len(batch["label"].numpy()) for batch in ds)


def raw_bytes(dataset_dir: str) -> int:
    import tensorflow as tf

    from tfkfp.components.common.dataset import split_files

    files = [f for s in ("train", "eval") for f in split_files(dataset_dir, s)[0]]
    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: tf.data.TFRecordDataset(f, buffer_size=1 << 20).batch(BATCH),
        cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True).prefetch(tf.data.AUTOTUNE)
    return sum(len(batch.numpy()) for batch in ds)


def pandas_csv(csv_path: str) -> int:
    import pandas as pd

    return len(pd.read_csv(csv_path).to_numpy())


def run(csv_path: str, work: str, repeats: int) -> List[Record]:
    import os

    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    dataset_dir = os.path.join(work, "read-dataset")
    shard_tfrecords(csv_path, dataset_dir, label="label", num_shards=8)
    print("reading and parsing", flush=True)
    load = load_average()
    rates = best_rates({
        "tfkfp make_dataset": lambda: ours(dataset_dir),
        "pandas.read_csv": lambda: pandas_csv(csv_path),
        "naive parse_single_example": lambda: naive(dataset_dir),
        "raw TFRecord bytes": lambda: raw_bytes(dataset_dir),
    }, repeats)
    mine = rates["tfkfp make_dataset"]
    return [
        Record("read_parse", "records/s", mine, "pandas.read_csv to NumPy",
               rates["pandas.read_csv"], 0.8, load),
        Record("read_parse", "records/s", mine, "naive map(parse_single_example)",
               rates["naive parse_single_example"], 10.0, load),
        Record("read_parse", "records/s", mine, "raw-bytes ceiling (no parsing)",
               rates["raw TFRecord bytes"], None, load),
    ]
