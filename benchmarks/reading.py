"""Scenario 2: reading and parsing the sharded table.

Ours (``make_dataset``) on the default ``packed`` layout against pandas.read_csv to NumPy,
against the naive ``map(parse_single_example)`` pipeline, and against the raw-bytes ceiling:
the same TFRecords read with the same interleave and batching, but not parsed. The same
table sharded one feature per column (``layout="columns"``) and in blocks of rows
(``layout="blocks"``) is read beside it, so the layouts compare within one run. Each is
timed whole (both splits, each pipeline's start included) and streaming (5 passes over the
train split after the first batch: the rate a long training job sees).
"""

import logging
from typing import List

from benchmarks.data import shard_layouts
from benchmarks.harness import (
    Record,
    against,
    best_rates,
    best_streaming_rates,
    load_average,
)

BATCH = 1024


def _consume(ds) -> int:
    rows = 0
    for features, _ in ds:
        rows += len(next(iter(features.values())).numpy())
    return rows


def ours(dataset_dir: str) -> int:
    from tfkfp.components.common.data.reader import make_dataset

    return sum(_consume(make_dataset(dataset_dir, mode="eval", split=split, batch_size=BATCH))
               for split in ("train", "eval"))


def naive(dataset_dir: str) -> int:
    import tensorflow as tf

    from tfkfp.components.common.data.dataset import split_files
    from tfkfp.components.common.data.decoding import feature_spec
    from tfkfp.components.common.data.schema import Schema

    schema = Schema.load(dataset_dir)
    spec = feature_spec(schema, schema.columns)
    files = [f for s in ("train", "eval") for f in split_files(dataset_dir, s)[0]]
    ds = tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))
    ds = ds.batch(BATCH)
    return sum(len(batch["label"].numpy()) for batch in ds)


def raw_bytes(dataset_dir: str) -> int:
    import tensorflow as tf

    from tfkfp.components.common.data.dataset import split_files

    files = [f for s in ("train", "eval") for f in split_files(dataset_dir, s)[0]]
    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: tf.data.TFRecordDataset(f, buffer_size=1 << 20).batch(BATCH),
        cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True).prefetch(tf.data.AUTOTUNE)
    return sum(len(batch.numpy()) for batch in ds)


def raw_block_rows(dataset_dir: str) -> int:
    """The raw read of a blocks Dataset, counted in rows (from its manifest)."""
    from tfkfp.components.common.data.dataset import Manifest

    raw_bytes(dataset_dir)
    return sum(Manifest.load(dataset_dir).records(s) for s in ("train", "eval"))


STREAM_EPOCHS = 5  # long enough that what the pipeline fills before its first batch is small


def ours_streaming(dataset_dir: str):
    """Rows of each batch of ``STREAM_EPOCHS`` passes over the train split through
    ``make_dataset``."""
    from tfkfp.components.common.data.dataset import Manifest
    from tfkfp.components.common.data.reader import make_dataset

    batches = STREAM_EPOCHS * -(-Manifest.load(dataset_dir).records("train") // BATCH)
    ds = make_dataset(dataset_dir, mode="eval", split="train", batch_size=BATCH, repeat=True)
    for _, labels in ds.take(batches):
        yield len(labels)


def raw_streaming(dataset_dir: str):
    """Rows of each batch of raw records of ``STREAM_EPOCHS`` passes over the train split (a
    block's rows counted as the manifest's rows per record)."""
    import tensorflow as tf

    from tfkfp.components.common.data.dataset import Manifest, split_files

    manifest = Manifest.load(dataset_dir)
    per_record = manifest.records("train") / max(sum(manifest.shard_blocks("train")), 1)
    files = split_files(dataset_dir, "train")[0]
    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: tf.data.TFRecordDataset(f, buffer_size=1 << 20).batch(BATCH),
        cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True).repeat(STREAM_EPOCHS).prefetch(tf.data.AUTOTUNE)
    for batch in ds:
        yield len(batch.numpy()) * per_record


def pandas_csv(csv_path: str) -> int:
    import pandas as pd

    return len(pd.read_csv(csv_path).to_numpy())


def run(csv_path: str, work: str, repeats: int) -> List[Record]:
    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    packed, columns, blocks = shard_layouts(csv_path, work, "read-dataset", 8).values()
    print("reading and parsing", flush=True)
    load = load_average()
    rates = best_rates({
        "tfkfp make_dataset (packed)": lambda: ours(packed),
        "tfkfp make_dataset (columns)": lambda: ours(columns),
        "tfkfp make_dataset (blocks)": lambda: ours(blocks),
        "pandas.read_csv": lambda: pandas_csv(csv_path),
        "naive parse_single_example": lambda: naive(columns),
        "raw TFRecord bytes (packed)": lambda: raw_bytes(packed),
        "raw TFRecord bytes (columns)": lambda: raw_bytes(columns),
        "raw TFRecord bytes (blocks)": lambda: raw_block_rows(blocks),
    }, repeats)
    in_blocks = rates["tfkfp make_dataset (blocks)"]
    print("reading and parsing, streaming (after the first batch; the train split)",
          flush=True)
    steady = best_streaming_rates({
        "tfkfp make_dataset (packed)": lambda: ours_streaming(packed),
        "tfkfp make_dataset (blocks)": lambda: ours_streaming(blocks),
        "raw TFRecord bytes (packed)": lambda: raw_streaming(packed),
        "raw TFRecord bytes (blocks)": lambda: raw_streaming(blocks),
    }, repeats)
    mine, per_column = rates["tfkfp make_dataset (packed)"], rates["tfkfp make_dataset (columns)"]
    csv, raw = "pandas.read_csv to NumPy", "raw bytes of the same files"
    return (
        against("read_parse", "records/s", mine, load, [
            (csv, rates["pandas.read_csv"], 1.0),
            (raw, rates["raw TFRecord bytes (packed)"], 0.7),
            ("layout=columns (same run)", per_column, None)])
        + against("read_parse columns", "records/s", per_column, load, [
            (csv, rates["pandas.read_csv"], None),
            ("naive map(parse_single_example)", rates["naive parse_single_example"], 10.0),
            (raw, rates["raw TFRecord bytes (columns)"], None)])
        + against("read_parse blocks", "records/s", in_blocks, load, [
            (csv, rates["pandas.read_csv"], 1.0),
            (raw, rates["raw TFRecord bytes (blocks)"], 0.7),
            ("layout=packed (same run)", mine, None)])
        + against("read_parse streaming", "records/s", steady["tfkfp make_dataset (packed)"],
                  load, [(f"{raw}, streaming", steady["raw TFRecord bytes (packed)"], 0.7)])
        + against("read_parse blocks streaming", "records/s",
                  steady["tfkfp make_dataset (blocks)"], load, [
                      (f"{raw}, streaming", steady["raw TFRecord bytes (blocks)"], 0.7),
                      ("layout=packed, streaming", steady["tfkfp make_dataset (packed)"],
                       None)]))
