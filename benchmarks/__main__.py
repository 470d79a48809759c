"""``python -m benchmarks [--quick | --smoke] [--only NAME | --skip NAME...] [--json PATH]``:
run every scenario (or one) and print ratios."""

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from typing import Callable, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import (
    beam,
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
    streaming,
    training,
    tuning,
    workers,
)
from benchmarks.harness import KEPT, Record, Run, parse_options, print_setup, report

# name -> the scenario on the run's shared table; a new scenario is one entry. In this order.
SCENARIOS: Dict[str, Callable[[Run], List[Record]]] = {
    "sharding": lambda r: sharding.run(r.csv_path, r.work, r.repeats,
                                       ["none"] if r.quick else ["none", "gzip"]),
    "reading": lambda r: reading.run(r.csv_path, r.work, r.repeats),
    "training": lambda r: training.run(r.csv_path, r.work, r.quick),
    "quantization": lambda r: quantization.run(r.work, r.repeats, r.quick, r.smoke),
    "prediction": lambda r: prediction.run(r.csv_path, r.work, r.repeats, r.smoke),
    "bottleneck": lambda r: bottleneck.run(r.csv_path, r.work, r.quick, smoke=r.smoke),
    "edge": lambda r: edge.run(r.work, r.quick, smoke=r.smoke),
    "edge_table": lambda r: edge_table.run(r.work, r.smoke),
    "edge_quantizer": lambda r: edge_quantizer.run(r.work, r.repeats),
    "endpoint": lambda r: endpoint.run(r.csv_path, r.work, r.repeats, smoke=r.smoke),
    "object_store": lambda r: object_store.run(r.csv_path, r.work, r.repeats, r.quick),
    "workers": lambda r: workers.run(r.work, r.quick, smoke=r.smoke),
    "beam": lambda r: beam.run(r.csv_path, r.work, r.repeats, smoke=r.smoke),
    "streaming": lambda r: streaming.run(r.csv_path, r.work, r.quick, r.smoke),
    "tuning": lambda r: tuning.run(r.work, r.quick, r.smoke),
}
OPT_IN = {"edge_quantizer"}  # only with --only: it needs litert-quantizer, not a dependency
# scenario -> (a module it imports, the package to install), checked before anything runs
NEEDS = {"edge_table": ("sklearn", "scikit-learn"),
         "beam": ("apache_beam", "tfkfp[beam]"), "streaming": ("apache_beam", "tfkfp[beam]"),
         "tuning": ("optuna", "tfkfp[tune]"),
         "edge_quantizer": ("litert_quantizer", "litert-quantizer==0.11.0")}


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, rows and repeats resolved (the docs' commands are checked with it)."""
    return parse_options("python -m benchmarks", argv, "20k rows, 2 repeats", rows=200_000,
                         kept=KEPT["best"], json=True, more=_choice_options)


def _choice_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=list(SCENARIOS), help="run this scenario alone")
    parser.add_argument("--skip", nargs="+", choices=list(SCENARIOS), default=[],
                        metavar="NAME", help="leave these scenarios out")


def chosen(args: argparse.Namespace) -> List[str]:
    """The scenarios a command line runs, in the suite's order: --only's, or every one but
    the opt-in ones and those --skip names."""
    if args.only:
        return [args.only]
    return [n for n in SCENARIOS if n not in OPT_IN and n not in args.skip]


def lacking(names: List[str]) -> List[str]:
    """What each of these scenarios needs and this machine lacks, one phrase each."""
    return [f"{name} needs {NEEDS[name][1]} (pip install {NEEDS[name][1]})"
            for name in names
            if name in NEEDS and importlib.util.find_spec(NEEDS[name][0]) is None]


def main(argv=None) -> int:
    args = parse_args(argv)
    missing = lacking(chosen(args))
    if missing:  # said now, not after the scenarios before it have run
        print(f"python -m benchmarks: {'; '.join(missing)}; or leave it out with --skip",
              file=sys.stderr)
        return 2
    print_setup(args.rows, args.repeats, "best")
    records: List[Record] = []
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        run = Run(data.write_table(work, args.rows), work, args.repeats, args.quick, args.smoke)
        for name in chosen(args):
            started = time.monotonic()
            records += SCENARIOS[name](run)
            print(f"{name}: {time.monotonic() - started:,.0f} s", flush=True)
    return report(records, args.smoke, args.json)


if __name__ == "__main__":
    sys.exit(main())
