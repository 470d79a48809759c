"""Scenario 1: sharding CSV into TFRecords, ours against the plain single-process loop.

The anchor is what most code does: csv rows -> ``tf.train.Example`` -> ``TFRecordWriter``.
"""

import csv
import os
import shutil
from typing import List

from benchmarks.harness import Record, best_rates, load_average


def plain_loop(csv_path: str, out_path: str, compression: str) -> int:
    import tensorflow as tf

    options = tf.io.TFRecordOptions(compression_type="GZIP" if compression == "gzip" else "")
    count = 0
    with open(csv_path, newline="") as f, tf.io.TFRecordWriter(out_path, options) as writer:
        reader = csv.reader(f)
        header = next(reader)
        for row in reader:
            feature = {name: tf.train.Feature(float_list=tf.train.FloatList(value=[float(v)]))
                       for name, v in zip(header[:-1], row[:-1])}
            feature[header[-1]] = tf.train.Feature(
                int64_list=tf.train.Int64List(value=[int(row[-1])]))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            count += 1
    return count


def ours(csv_path: str, out_dir: str, compression: str) -> int:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    shutil.rmtree(out_dir, ignore_errors=True)
    result = shard_tfrecords(csv_path, out_dir, label="label", compression=compression,
                             num_shards=4)
    return result.total_records


def run(csv_path: str, work: str, repeats: int, compressions: List[str]) -> List[Record]:
    import logging

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    records = []
    for compression in compressions:
        print(f"sharding CSV -> TFRecord ({compression})", flush=True)
        load = load_average()
        rates = best_rates({
            "plain loop": lambda c=compression: plain_loop(
                csv_path, os.path.join(work, "plain.tfrecord"), c),
            "tfkfp shard_tfrecords": lambda c=compression: ours(
                csv_path, os.path.join(work, "ours"), c),
        }, repeats)
        records.append(Record(
            f"shard_csv_{compression}", "records/s", rates["tfkfp shard_tfrecords"],
            "plain tf.train.Example loop", rates["plain loop"],
            1.5 if compression == "none" else None, load))
    return records
