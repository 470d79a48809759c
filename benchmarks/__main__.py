"""``python -m benchmarks [--quick] [--json PATH]``: run every scenario and print ratios."""

import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import (
    bottleneck,
    data,
    edge,
    edge_quantizer,
    edge_table,
    endpoint,
    object_store,
    prediction,
    quantization,
    reading,
    sharding,
    training,
    workers,
)
from benchmarks.harness import load_average, parse_options, print_records

SCENARIOS = ["sharding", "reading", "training", "quantization", "prediction", "bottleneck",
             "edge", "edge_table", "edge_quantizer", "endpoint",
             "object_store", "workers"]


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, rows and repeats resolved (the docs' commands are checked with it)."""
    return parse_options("python -m benchmarks", argv, "20k rows, 2 repeats", rows=200_000,
                         kept="best is kept", json=True,
                         more=lambda parser: parser.add_argument("--only", choices=SCENARIOS))


def main(argv=None) -> int:
    args = parse_args(argv)
    rows, repeats = args.rows, args.repeats
    print(f"table: {rows:,} rows x {data.FLOAT_COLUMNS} float columns; best of {repeats}; "
          f"{os.cpu_count()} cores; load average {load_average()}", flush=True)
    records = []
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        csv_path = data.write_table(work, rows)
        if args.only in (None, "sharding"):
            compressions = ["none"] if args.quick else ["none", "gzip"]
            records += sharding.run(csv_path, work, repeats, compressions)
        if args.only in (None, "reading"):
            records += reading.run(csv_path, work, repeats)
        if args.only in (None, "training"):
            records += training.run(csv_path, work, args.quick)
        if args.only in (None, "quantization"):
            records += quantization.run(work, repeats, quick=args.quick)
        if args.only in (None, "prediction"):
            records += prediction.run(csv_path, work, repeats)
        if args.only in (None, "bottleneck"):
            records += bottleneck.run(csv_path, work, args.quick)
        if args.only in (None, "edge"):
            records += edge.run(work, args.quick)
        if args.only in (None, "edge_table"):
            records += edge_table.run(work)
        if args.only == "edge_quantizer":  # opt-in: needs litert-quantizer, not a dependency
            records += edge_quantizer.run(work, repeats)
        if args.only in (None, "endpoint"):
            records += endpoint.run(csv_path, work, repeats)
        if args.only in (None, "object_store"):
            records += object_store.run(csv_path, work, repeats, args.quick)
        if args.only in (None, "workers"):
            records += workers.run(work, args.quick)
    print_records(records)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_dict() for r in records], f, indent=2)
    return 0 if all(r.met is not False for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
