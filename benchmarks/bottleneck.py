"""Scenario: what bounds training, per ``diagnose_bottleneck``, on the demo digits and on the
benchmark table (200k x 32 floats; 20k with --quick), with train's default model and batch.

The ratios are the diagnosis' own comparisons in one run: input records/s against the
step's records/s on held batches (below 1: input-bound), and the step fed by the pipeline
against the step alone (1 minus the input-wait share).

``python -m benchmarks.bottleneck [--quick]``
"""

import os
import tempfile
from typing import List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import data
from benchmarks.harness import (
    QUICK_ROWS,
    Record,
    load_average,
    parse_options,
    print_records,
)

BATCHES = (64, 256)  # train's default, and the training benchmark's


def diagnose(name: str, dataset_dir: str, batch_size: int, seconds: float) -> List[Record]:
    from tfkfp.components.diagnose_bottleneck.core import diagnose_bottleneck

    result = diagnose_bottleneck(dataset_dir, batch_size=batch_size, seconds=seconds)
    f = result.figures
    print(f"\n{name}, batch_size={batch_size}: {result.verdict}: {result.summary}")
    print(f"  read cold without parsing {f['read_records_per_second']:,.0f} records/s "
          f"({f['read_mb_per_second']:,.1f} MB/s); parsed {f['input_records_per_second']:,.0f} "
          f"records/s ({f['input_mb_per_second']:,.1f} MB/s); step alone "
          f"{f['compute_records_per_second']:,.0f}, fed {f['combined_records_per_second']:,.0f}"
          f" records/s; step needs {f['step_memory_mb']:,.1f} MB of "
          f"{f['memory_budget_mb']:,.0f} MB; {f['diagnosis_seconds']:.0f} s to diagnose")
    for i, remedy in enumerate(result.remedies, 1):
        print(f"  {i}. {remedy.text()}")
    scenario = f"{name} b{batch_size} {result.verdict.split('-')[0]}"
    load = load_average()
    return [Record(scenario, "input records/s", f["input_records_per_second"], "step alone",
                   f["compute_records_per_second"], None, load),
            Record(scenario, "fed step records/s", f["combined_records_per_second"],
                   "step alone", f["compute_records_per_second"], None, load)]


def run(csv_path: str, work: str, quick: bool) -> List[Record]:
    from tfkfp.components.common.data.demo_data import write_demo_data
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    seconds = 1.0 if quick else 3.0
    demo_dir = os.path.join(work, "demo-dataset")
    shard_tfrecords(write_demo_data(os.path.join(work, "demo")).csv, demo_dir, label="label",
                    keys=["id"])
    table_dir = os.path.join(work, "table-dataset")
    shard_tfrecords(csv_path, table_dir, label="label", num_shards=4)
    records = []
    for name, directory in (("demo", demo_dir), ("table", table_dir)):
        for batch_size in BATCHES:
            records += diagnose(name, directory, batch_size, seconds)
    return records


def main(argv=None) -> int:
    args = parse_options("python -m benchmarks.bottleneck", argv,
                         "20k rows, 1 s per measurement")
    rows = QUICK_ROWS if args.quick else 200_000
    print(f"{os.cpu_count()} cores; load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        records = run(data.write_table(work, rows), work, args.quick)
    print_records(records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
