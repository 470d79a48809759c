"""Scenario: tuning train's settings with the local engine (an Optuna study).
``python -m benchmarks.tuning [--quick | --smoke]`` (also ``python -m benchmarks --only
tuning``).

A generated table whose label is learnable but not in a few epochs at train's defaults (an
interaction of two columns and a threshold on a third, among noise columns on another
scale). Each trial is train in a process of its own, as the step runs it.

- the best trial against train with its defaults: the gain in eval accuracy over the
  defaults' mean, against 3 standard deviations of the defaults' seed-to-seed noise (3
  seeds); target: the gain is larger (ratio at least 1);
- median pruning: trial-epochs of the same study without pruning against with it, mean over
  3 sampler seeds (``n_startup_trials`` 2, the step's); target: pruning needs at
  most 0.75x (ratio at least 1.33), with an equally good best (printed);
- two trials at a time against one: the study's wall time, no target (the cores are shared).
"""

import csv
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from benchmarks.harness import Record, load_average, parse_options, print_records

EPOCHS = 3  # every trial's, and the defaults'
OBJECTIVE = "eval_accuracy"
SPACE = {"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
         "batch_size": {"type": "categorical", "choices": [32, 64, 128]},
         "hidden_units": {"type": "categorical", "choices": ["64", "128,64", "256,128"]}}


def write_table(work: str, rows: int = 3000) -> str:
    """The label: (x0 * x1 > 0) XOR (sin(2 x2) > 0.5); x3 and x4 noise 40 times larger."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(rows, 8)).astype(np.float32)
    x[:, 3:5] *= 40
    label = np.where((x[:, 0] * x[:, 1] > 0) ^ (np.sin(2 * x[:, 2]) > 0.5), "yes", "no")
    path = os.path.join(work, "tuning.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([f"x{i}" for i in range(8)] + ["label"])
        writer.writerows(list(np.round(r, 4)) + [y] for r, y in zip(x, label))
    return path


def defaults(dataset: str, work: str, seeds: List[int]) -> List[float]:
    """train with its defaults (but the epochs), one accuracy a seed."""
    from tfkfp.components.train.core import train

    return [train(dataset, os.path.join(work, f"defaults-{seed}"), epochs=EPOCHS,
                  seed=seed).metrics()[OBJECTIVE] for seed in seeds]


def study(dataset: str, work: str, name: str, trials: int, seed: int, pruning: bool,
          parallel: int = 1) -> Dict:
    from tfkfp.components.tune.core import tune

    started = time.monotonic()
    result = tune(dataset, os.path.join(work, name), search_space=SPACE, objective=OBJECTIVE,
                  trials=trials, parallel_trials=parallel, pruning=pruning, sampler_seed=seed,
                  train_options={"epochs": EPOCHS})
    found = {"best": result.best_value, "seconds": time.monotonic() - started,
             "epochs": sum(r["epochs"] for r in result.trials),
             "pruned": result.counts()["pruned"]}
    print(f"  {name}: best {found['best']:.3f}, {found['epochs']} trial-epochs, "
          f"{found['pruned']} pruned, {found['seconds']:.0f} s", flush=True)
    return found


def run(work: str, quick: bool, smoke: bool = False) -> List[Record]:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    dataset = os.path.join(work, "tuning-dataset")
    shard_tfrecords(write_table(work, 1000 if smoke else 3000), dataset, label="label",
                    num_shards=2)
    load = load_average()
    trials, seeds = (3, [1]) if smoke else (8, [1]) if quick else (16, [1, 2, 3])
    base = defaults(dataset, work, [1, 2] if smoke else [1, 2, 3])
    mean, noise = statistics.mean(base), statistics.stdev(base)
    print(f"  defaults: {', '.join(f'{a:.3f}' for a in base)} (mean {mean:.3f}, standard "
          f"deviation {noise:.3f})", flush=True)
    pruned = [study(dataset, work, f"pruned-{s}", trials, s, True) for s in seeds]
    full = [study(dataset, work, f"unpruned-{s}", trials, s, False) for s in seeds]
    best = statistics.mean(p["best"] for p in pruned)
    print(f"  best with pruning {best:.3f}, without "
          f"{statistics.mean(f['best'] for f in full):.3f}", flush=True)
    records = [
        Record("tuning, best", "accuracy gain (pts)", 100 * (best - mean),
               "3 sd of defaults (pts)", 300 * noise, 1.0, load),
        Record("tuning, pruning", "trial-epochs", statistics.mean(f["epochs"] for f in full),
               "with median pruning", statistics.mean(p["epochs"] for p in pruned),
               round(1 / 0.75, 2), load)]
    if not smoke:
        serial = pruned[0]["seconds"]
        two = study(dataset, work, "parallel-1", trials, seeds[0], True, parallel=2)
        records.append(Record("tuning, 2 at a time", "study seconds", serial,
                              "2 trials at a time", two["seconds"], None, load))
    return records


def main(argv=None) -> int:
    args = parse_options("python -m benchmarks.tuning", argv,
                         "8 trials and one sampler seed")
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        records = run(work, args.quick, args.smoke)
    print_records(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
