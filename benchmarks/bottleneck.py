"""Scenario: what bounds training, per ``diagnose_bottleneck``, and whether its advice holds.

Three tables, each diagnosed several times with train's default model, at train's default
batch (64) and the training benchmark's (256): the demo digits, the benchmark table (200k x
32 floats; 20k with --quick) sharded ``packed``, and the same table GZIP-compressed with one
feature per column. Reported per table and batch:

- how many runs gave the most common verdict (target: every run);
- whether any run said compute-bound while its step waited for input more than half the
  time (target: none);
- the top three remedies of the last run, each applied (the table resharded with the
  knob's value, or train given it) and measured with ``train`` against ``train`` without
  it: the top remedy's gain over the best of the three (target 0.7x), judged where the
  best gains more than run-to-run noise (10%).

``python -m benchmarks.bottleneck [--quick | --smoke]`` (smoke: one diagnosis per table at
batch 64, its top remedy measured, seconds in all)
"""

import ast
import collections
import dataclasses
import math
import os
import re
import tempfile
from typing import Dict, List, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import data
from benchmarks.harness import Record, load_average, parse_options, print_records

RUNS, QUICK_RUNS = 5, 2  # diagnoses per table and batch
BATCHES = (64, 256)  # train's default, and the training benchmark's
TABLES = ("demo", "packed", "gzip columns")
TRAIN_EXAMPLES = 100_000  # per measured remedy, at least 3 epochs: train's rate after the first
NOISE = 0.10  # train's examples/s moves this much between identical runs on this machine
KNOB = re.compile(r"^(shard_tfrecords|train) (\w+)=(.+)$")  # a remedy that can be applied


@dataclasses.dataclass(frozen=True)
class Plan:
    """How hard each table is measured."""

    runs: int  # diagnoses per table and batch size
    seconds: float  # per diagnose_bottleneck measurement
    batches: Tuple[int, ...] = BATCHES
    remedies: int = 3  # of the last diagnosis, each measured with train
    epochs: int = 3  # at least, per measured train (its rate counts after the first)
    examples: int = TRAIN_EXAMPLES  # at least, per measured train
    tables: Tuple[str, ...] = TABLES


PLANS = {"full": Plan(RUNS, 3.0), "quick": Plan(QUICK_RUNS, 1.0),
         "smoke": Plan(1, 0.5, BATCHES[:1], remedies=1, epochs=2, examples=0,
                       tables=("packed",))}


def tables(csv_path: str, work: str, names=TABLES) -> Dict[str, Tuple[str, Dict]]:
    """name -> (Dataset folder, the shard_tfrecords options that made it), for ``names``."""
    from tfkfp.components.common.data.demo_data import write_demo_data

    sources = {"demo": lambda: write_demo_data(os.path.join(work, "demo")).csv}
    made = {"demo": ("demo", {"keys": ["id"]}),
            "packed": (csv_path, {"num_shards": 4, "layout": "packed"}),
            "gzip columns": (csv_path, {"num_shards": 4, "layout": "columns",
                                        "compression": "gzip"})}
    out = {}
    for name in names:
        source, options = made[name]
        source = sources[source]() if source in sources else source
        out[name] = (shard(source, work, name, options), {"source": source, **options})
    return out


def shard(source: str, work: str, name: str, options: Dict) -> str:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    folder = os.path.join(work, "dataset-" + re.sub(r"\W+", "-", name))
    if not os.path.exists(folder):
        shard_tfrecords(source, folder, label="label", **options)
    return folder


def diagnose_runs(dataset: str, batch_size: int, runs: int, seconds: float):
    from tfkfp.components.diagnose_bottleneck.core import diagnose_bottleneck

    results = []
    for _ in range(runs):
        result = diagnose_bottleneck(dataset, batch_size=batch_size, seconds=seconds)
        f = result.figures
        print(f"    {result.verdict}: input {f['input_records_per_second']:,.0f}, step alone "
              f"{f['compute_records_per_second']:,.0f}, fed {f['combined_records_per_second']:,.0f}"
              f" records/s, wait {f['input_wait_fraction']:.0%}", flush=True)
        results.append(result)
    return results


def train_rate(dataset: str, work: str, plan: Plan, **options) -> float:
    """train's examples/s (after its first epoch) with train's defaults and ``options``."""
    from tfkfp.components.common.data.dataset import Manifest
    from tfkfp.components.train.core import train

    epochs = max(plan.epochs, math.ceil(plan.examples / Manifest.load(dataset).records("train")))
    model_dir = tempfile.mkdtemp(prefix="model-", dir=work)
    return train(dataset, model_dir, epochs=epochs, **options).figures["examples_per_second"]


def remedy_gain(knob: str, table: str, dataset: str, made: Dict, work: str, base: float,
                batch_size: int, plan: Plan) -> float | None:
    """The measured gain of one remedy on ``table`` (rate with it / rate without, less 1);
    None when it cannot be applied here (no knob, several values, another machine)."""
    match = KNOB.match(knob)
    if not match or "," in match.group(3):
        return None
    step, name, value = match.group(1), match.group(2), ast.literal_eval(match.group(3))
    if step == "shard_tfrecords":
        options = {k: v for k, v in made.items() if k != "source"}
        options[name] = value
        # one folder per table and option: both batches train on the same resharding
        changed = shard(made["source"], work, f"{table} {name}={value}", options)
        return train_rate(changed, work, plan, batch_size=batch_size) / base - 1
    return train_rate(dataset, work, plan, **{"batch_size": batch_size, name: value}) / base - 1


def judge(name: str, dataset: str, made: Dict, work: str, batch_size: int,
          plan: Plan) -> List[Record]:
    print(f"\n{name}, batch_size={batch_size}:", flush=True)
    runs = plan.runs
    results = diagnose_runs(dataset, batch_size, runs, plan.seconds)
    verdicts = collections.Counter(r.verdict for r in results)
    waited = sum(r.verdict == "compute-bound" and r.figures["input_wait_fraction"] > 0.5
                 for r in results)
    print(f"  verdicts {dict(verdicts)}; compute-bound while waiting over half: {waited}")
    top = results[-1].remedies[:plan.remedies]
    base = train_rate(dataset, work, plan, batch_size=batch_size)
    gains = [(r.knob, remedy_gain(r.knob, name, dataset, made, work, base, batch_size, plan))
             for r in top]
    print(f"  train {base:,.0f} examples/s; the last run's top {len(top)} remedies:")
    for i, (knob, gain) in enumerate(gains, 1):
        measured = "not measurable here" if gain is None else f"{gain:+.0%}"
        print(f"    {i}. {knob or '(no knob)'}: {measured}")
    load = load_average()
    name = f"{name} b{batch_size}"
    records = [Record(f"diagnose {name}", "same verdict, runs", verdicts.most_common(1)[0][1],
                      "runs", runs, 1.0, load),
               Record(f"diagnose {name}", "runs not contradicted", runs - waited,
                      "runs", runs, 1.0, load)]
    measured = [g for _, g in gains if g is not None]
    if not measured or max(measured) < NOISE:
        print(f"  no remedy of the three gained {NOISE:.0%} or more (run-to-run noise here): "
              "the ranking is not judged")
    elif gains[0][1] is not None:
        records.append(Record(f"diagnose {name}", "top remedy gain %",
                              100 * max(gains[0][1], 0.0), "best of the top three",
                              100 * max(measured), 0.7, load))
    return records


def run(csv_path: str, work: str, quick: bool, smoke: bool = False) -> List[Record]:
    plan = PLANS["smoke" if smoke else "quick" if quick else "full"]
    records = []
    for name, (dataset, made) in tables(csv_path, work, plan.tables).items():
        for batch_size in plan.batches:
            records += judge(name, dataset, made, work, batch_size, plan)
    return records


def main(argv=None) -> int:
    args = parse_options("python -m benchmarks.bottleneck", argv,
                         f"20k rows, 1 s per measurement, {QUICK_RUNS} diagnoses per table",
                         rows=200_000)
    print(f"{os.cpu_count()} cores; load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        records = run(data.write_table(work, args.rows), work, args.quick, args.smoke)
    print_records(records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
