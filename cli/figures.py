"""The figures a local run reports: each task's key figures, and a step's own throughput.

A step's rate in its metadata may count its start-up (batch_predict's and shard_tfrecords'
do: importing TensorFlow and loading the model are inside their ``seconds``), which on a small
input is most of the time. A step's own throughput is its records over the time spent
reading, encoding or predicting, and writing them: the time its progress meters
(common.platform.progress) ran, from the last line each wrote.
"""

import re
from typing import Any, Callable, Dict, List, Tuple

from tfkfp.components.common.platform.progress import human

# Steps whose metadata rate counts start-up: their progress meters, the records' one last.
PROGRESS = {"batch-predict": ("predicting",),
            "shard-tfrecords": ("reading and encoding", "writing shards")}
# Steps whose metadata rate counts start-up and that have no meters of their own: the merge
# of the fanned-out batch_predict tasks (their own rates are on their lines).
STARTUP_ONLY = {"merge-predictions"}
_SCALE = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_NUMBER = r"([\d.]+)([kMGT]?)"


def step_of(task: str) -> str:
    """The step a task runs: ``batch-predict-2 #2`` -> ``batch-predict``."""
    return re.sub(r"(-\d+)?( #\d+)?$", "", task)


def step_rate(task: str, log_path: str) -> float | None:
    """The task's own records per second from its log, for the steps in PROGRESS; None for
    the others, or when a meter's last line is missing."""
    meters = PROGRESS.get(step_of(task))
    if meters is None:
        return None
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    last = {}
    for what in meters:
        found = re.findall(rf"{re.escape(what)}: {_NUMBER} (\w+), {_NUMBER} \w+/s", text)
        if not found:
            return None
        done, done_unit, _, rate, rate_unit = found[-1]
        last[what] = (float(done) * _SCALE[done_unit], float(rate) * _SCALE[rate_unit])
    seconds = sum(done / rate for done, rate in last.values() if rate > 0)
    return last[meters[-1]][0] / seconds if seconds > 0 else None


def _records(value: Any) -> str:
    if isinstance(value, dict):
        parts = ", ".join(f"{split} {count:,.0f}" for split, count in value.items())
        return f"{sum(value.values()):,.0f} records ({parts})"
    return f"{value:,.0f} records"


FORMATS: List[Tuple[str, Callable[[Any], str]]] = [
    ("records", _records),
    ("predictions", lambda v: f"{v:,.0f} predictions"),
    ("errors", lambda v: f"{v:,.0f} errors"),
    ("error_fraction", lambda v: f"{v:.2%} of rows failed" if v else ""),  # only if any did
    ("verdict", str),
    ("eval_accuracy", lambda v: f"eval accuracy {v:.4f}"),
    ("eval_rmse", lambda v: f"eval RMSE {v:.4g}"),
    ("eval_r2", lambda v: f"eval R² {v:.4f}"),
    ("mode", str),
    ("size_bytes", lambda v: f"{v / 1e6:.3f} MB"),
    ("accuracy", lambda v: f"accuracy {v:.4f}"),
    ("agreement", lambda v: f"agreement {v:.4f}"),
    ("rmse", lambda v: f"RMSE {v:.4g}"),
    ("examples_per_second", lambda v: f"{human(v)} examples/s"),
    ("records_per_second", lambda v: f"{human(v)} records/s"),
]


def task_figures(task: str, outputs: Dict[str, Any], log_path: str) -> str:
    """A task's key figures, its rate its own throughput (or left out, where only a rate
    that counts start-up is known)."""
    rate = step_rate(task, log_path)
    if rate is None and step_of(task) in (STARTUP_ONLY | set(PROGRESS)):
        return key_figures(outputs, drop=("records_per_second",))
    return key_figures(outputs, rate)


def key_figures(outputs: Dict[str, Any], own_rate: float | None = None,
                drop: Tuple[str, ...] = ()) -> str:
    """Key figures from the outputs' metadata (first output first) but those in ``drop``;
    ``own_rate`` replaces a records_per_second that counts start-up."""
    found: Dict[str, Any] = {}
    for value in outputs.values():
        if isinstance(value, list):  # group_numbers: the suite's one list output
            found.setdefault("groups", len(value))
        meta = value if isinstance(value, dict) else getattr(value, "metadata", None) or {}
        for key, item in meta.items():
            found.setdefault(key, item)
    if own_rate is not None:
        found["records_per_second"] = own_rate
    parts = [f"{found['groups']:.0f} group(s)"] if "groups" in found else []
    parts += [fmt(found[key]) for key, fmt in FORMATS
              if key not in drop and _shown(found.get(key))]
    return ", ".join(part for part in parts if part)


def _shown(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, (int, float)) for v in value.values())
    return isinstance(value, (int, float, str)) and not isinstance(value, bool) and value != ""
