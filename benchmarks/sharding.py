"""Scenario 1: sharding CSV into TFRecords, ours against the plain single-process loop.

The anchor is what most code does: csv rows -> ``tf.train.Example`` -> ``TFRecordWriter``.
The strongest library path, tfx_bsl's Arrow-to-Examples encoder (``tfx_bsl_anchor.py``), is
a second anchor where an interpreter with tfx_bsl is found; tfkfp's layout ``columns`` writes
the same records it does.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
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


def ours(csv_path: str, out_dir: str, compression: str, layout: str = "packed") -> int:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    shutil.rmtree(out_dir, ignore_errors=True)
    result = shard_tfrecords(csv_path, out_dir, label="label", compression=compression,
                             num_shards=4, layout=layout)
    return result.total_records


def tfx_bsl_python() -> str | None:
    """An interpreter that has tfx_bsl: ``TFKFP_TFX_BSL_PYTHON``, or this one."""
    named = os.environ.get("TFKFP_TFX_BSL_PYTHON")
    if named:
        return named
    try:
        import tfx_bsl  # noqa: F401
    except ImportError:
        return None
    return sys.executable


def tfx_bsl_rate(csv_path: str, work: str, repeats: int) -> float | None:
    python = tfx_bsl_python()
    if python is None:
        print("  tfx_bsl anchor skipped: no interpreter with tfx_bsl (install tfx-bsl in a "
              "separate environment and set TFKFP_TFX_BSL_PYTHON to its python)", flush=True)
        return None
    script = os.path.join(os.path.dirname(__file__), "tfx_bsl_anchor.py")
    done = subprocess.run([python, script, csv_path, os.path.join(work, "tfx.tfrecord"),
                           str(repeats)], capture_output=True, text=True, check=False)
    if done.returncode:
        print(f"  tfx_bsl anchor failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["records_per_second"]


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
    print("sharding CSV -> TFRecord: tfx_bsl's Arrow encoder, one feature per column",
          flush=True)
    load = load_average()
    anchor = tfx_bsl_rate(csv_path, work, repeats)
    if anchor:
        rates = best_rates({
            "tfkfp shard_tfrecords (packed)": lambda: ours(csv_path, os.path.join(work, "ours"),
                                                           "none"),
            "tfkfp shard_tfrecords (columns)": lambda: ours(
                csv_path, os.path.join(work, "ours"), "none", "columns"),
        }, repeats)
        records += [
            Record("shard_csv_none", "records/s", rates["tfkfp shard_tfrecords (packed)"],
                   "tfx_bsl Arrow-to-Examples + TFRecordWriter", anchor, 1.0, load),
            Record("shard_csv_none columns", "records/s",
                   rates["tfkfp shard_tfrecords (columns)"],
                   "tfx_bsl Arrow-to-Examples + TFRecordWriter (same records)", anchor, 1.0,
                   load)]
    return records
