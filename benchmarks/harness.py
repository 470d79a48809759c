"""Helpers shared by the scenarios: their command line, interleaved best-of-N runs, result
records, and the main of a scenario on the benchmark table."""

import argparse
import dataclasses
import gc
import json
import os
import tempfile
import time
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

from benchmarks import data

QUICK_ROWS = 20_000  # a table's rows with --quick
SMOKE_ROWS = 2_000  # with --smoke
REPEATS, QUICK_REPEATS = 3, 2  # runs per contender, without and with --quick (--smoke: 1)
KEPT = {"best": "best is kept", "median": "the median is kept"}  # --repeats' help, by statistic
MLP = "32-256-256-10 MLP"  # the model the prediction scenarios serve over the table
SMOKE_HELP = ("seconds, not minutes: every step once on a tiny table, to check that the "
              "benchmark runs end to end (the figures mean nothing; implies --quick)")


@dataclasses.dataclass
class Record:
    scenario: str
    metric: str
    ours: float
    anchor: str
    anchor_value: float
    target: float | None
    load_avg: float

    @property
    def ratio(self) -> float:
        return self.ours / self.anchor_value if self.anchor_value else float("inf")

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.ratio >= self.target

    def to_dict(self) -> Dict:
        out = dataclasses.asdict(self)
        out.update(ratio=round(self.ratio, 3), met=self.met)
        return out


def parse_options(prog: str, argv: Sequence[str] | None, quick_help: str, rows: int = 0,
                  kept: str = "", json: bool = False,
                  more: Callable[[argparse.ArgumentParser], None] | None = None
                  ) -> argparse.Namespace:
    """A benchmark's command line: --quick (``quick_help`` says what it shrinks) and --smoke
    (SMOKE_HELP); --rows when ``rows`` sizes its table (QUICK_ROWS with --quick, SMOKE_ROWS
    with --smoke); --repeats when ``kept`` says which of the runs per contender counts
    (REPEATS, QUICK_REPEATS with --quick, 1 with --smoke); --json PATH when ``json``;
    ``more`` adds the benchmark's own flags. quick, rows and repeats come back resolved."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    if rows:
        parser.add_argument("--rows", type=int,
                            help=f"table rows (default {rows}, quick {QUICK_ROWS}, smoke "
                            f"{SMOKE_ROWS})")
    if kept:
        parser.add_argument("--repeats", type=int, help=f"runs per contender ({kept})")
    if json:
        parser.add_argument("--json", metavar="PATH", help="save the results as JSON")
    if more is not None:
        more(parser)
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    if rows:
        args.rows = args.rows or sized(args, rows, QUICK_ROWS, SMOKE_ROWS)
    if kept:
        args.repeats = args.repeats or sized(args, REPEATS, QUICK_REPEATS, 1)
    return args


def sized(args: argparse.Namespace, full, quick, smoke):
    """``full``, ``quick`` or ``smoke``, as the command line asked (parse_options' args)."""
    return smoke if args.smoke else quick if args.quick else full


@dataclasses.dataclass(frozen=True)
class Run:
    """What each scenario of the suite (``python -m benchmarks``) is given: the shared table,
    a scratch folder, the runs per contender and how short the run is."""

    csv_path: str
    work: str
    repeats: int
    quick: bool = False
    smoke: bool = False


def against(scenario: str, metric: str, ours: float, load: float,
            anchors: Sequence[Tuple[str, float, float | None]]) -> List[Record]:
    """One figure of ours set against several anchors, each ``(anchor, its value, target or
    None)``: a Record each. Scenarios report mostly in such groups; this says the figure once."""
    return [Record(scenario, metric, ours, anchor, value, target, load)
            for anchor, value, target in anchors]


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def best_rates(runs: Dict[str, Callable[[], int]], repeats: int) -> Dict[str, float]:
    """Items per second for each contender: best of ``repeats`` runs, interleaved.

    Each callable does the whole job once and returns how many items it handled. The
    order of contenders rotates every round so none always runs on a warm or cold cache.
    """
    best = {name: 0.0 for name in runs}
    for name in _rounds(list(runs), repeats):
        started = time.perf_counter()
        items = runs[name]()
        rate = items / (time.perf_counter() - started)
        best[name] = max(best[name], rate)
        print(f"  {name}: {rate:,.0f} items/s", flush=True)
    return best


def best_streaming_rates(runs: Dict[str, Callable[[], Iterator[int]]], repeats: int
                         ) -> Dict[str, float]:
    """As ``best_rates``, but each callable yields the items of each batch it hands out and
    the clock starts after the first: the steady rate, without the pipeline's start."""
    best = {name: 0.0 for name in runs}
    for name in _rounds(list(runs), repeats):
        batches = runs[name]()
        next(batches)
        started, items = time.perf_counter(), 0
        for count in batches:
            items += count
        rate = items / (time.perf_counter() - started)
        best[name] = max(best[name], rate)
        print(f"  {name}, streaming: {rate:,.0f} items/s", flush=True)
    return best


def _rounds(names: List[str], repeats: int) -> Iterator[str]:
    """Each contender ``repeats`` times, the order rotating every round (none always runs
    on a warm or cold cache), garbage collected before each."""
    for round_no in range(repeats):
        for name in names[round_no % len(names):] + names[:round_no % len(names)]:
            gc.collect()
            yield name


def exit_status(records: List[Record], smoke: bool = False) -> int:
    """A benchmark's exit status: 1 when a target was missed, 0 otherwise and after a smoke
    run (whose figures mean nothing), which then says so."""
    if smoke:
        print("(smoke run: every step ran; the figures are not judged)")
        return 0
    return 0 if all(r.met is not False for r in records) else 1


def print_records(records: List[Record]) -> None:
    print(f"\n{'scenario':<24}{'metric':<22}{'anchor':<34}{'ours':>12}{'anchor':>12}"
          f"{'ratio':>8}{'target':>8}  met")
    for r in records:
        target = "" if r.target is None else f"{r.target:g}x"
        met = "" if r.met is None else ("yes" if r.met else "NO")
        print(f"{r.scenario:<24}{r.metric:<22}{r.anchor:<34}{r.ours:>12,.0f}"
              f"{r.anchor_value:>12,.0f}{r.ratio:>7.2f}x{target:>8}  {met}")


def print_setup(rows: int, repeats: int, statistic: str, model: str = "") -> None:
    """The line a run on the benchmark table opens with: the table, the model (if one), how
    the repeats are kept, the cores and the load (figures from a busy machine mislead)."""
    model = f"{model}; " if model else ""
    print(f"table: {rows:,} rows x {data.FLOAT_COLUMNS} float columns; {model}{statistic} of "
          f"{repeats}; {os.cpu_count()} cores; load average {load_average()}", flush=True)


def report(records: List[Record], smoke: bool = False, json_path: str | None = None,
           note: str = "") -> int:
    """The end of a benchmark's main: the records' table, ``note`` on how to read it, the
    records saved as JSON when --json asked; the exit status (``exit_status``)."""
    print_records(records)
    if note:
        print(note)
    if json_path:
        with open(json_path, "w") as f:
            json.dump([r.to_dict() for r in records], f, indent=2)
    return exit_status(records, smoke)


def table_main(prog: str, argv: Sequence[str] | None, rows: int, statistic: str,
               run: Callable[[str, str, int, bool], List[Record]]) -> int:
    """The main of a scenario that serves the MLP over the benchmark table (prediction,
    endpoint, beam), so they share one command line and output: ``run(csv_path, work,
    repeats, smoke)`` on a fresh table of ``rows`` rows (by default) in a scratch folder,
    each figure the ``statistic`` ("best" or "median") of the repeats."""
    args = parse_options(prog, argv, "20k rows, 2 repeats", rows=rows, kept=KEPT[statistic])
    print_setup(args.rows, args.repeats, statistic, MLP)
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        records = run(data.write_table(work, args.rows), work, args.repeats, args.smoke)
    return report(records, args.smoke)
