"""The figures a local run reports: each task's key figures, from its outputs' metadata.

A step's ``records_per_second`` is its own throughput (shard_tfrecords and batch_predict
count the time spent on the records, not start-up), the figure the Kubeflow UI's Metrics
show for the same run.
"""

import re
from typing import Any, Callable, Dict, List, Tuple

from tfkfp.components.common.platform.progress import human

# Steps whose decision is a sentence in their log, not a figure: the line's prefix. The last
# such line is the step's own account (the gate's verdict and why, the smoke test's rows).
TOLD = {"deploy-gate": "deploy gate: ", "smoke-test": "smoke test: "}
# Output types that are reports of a task, not what it made.
REPORTS = ("Metrics", "ClassificationMetrics", "Markdown", "HTML")


def step_of(task: str) -> str:
    """The step a task runs: ``batch-predict-2 #2`` -> ``batch-predict``."""
    return re.sub(r"(-\d+)?( #\d+)?$", "", task)


def told(task: str, log_path: str) -> str:
    """The step's own account of its decision from its log (TOLD), or ""."""
    prefix = TOLD.get(step_of(task))
    if prefix is None:
        return ""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            lines = [line for line in f if prefix in line]
    except OSError:
        return ""
    return lines[-1].split(prefix, 1)[1].strip() if lines else ""


def is_report(value: Any) -> bool:
    return type(value).__name__ in REPORTS


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


def key_figures(outputs: Dict[str, Any]) -> str:
    """Key figures from the outputs' metadata (first output first)."""
    found: Dict[str, Any] = {}
    for value in outputs.values():
        if isinstance(value, list):  # group_numbers: the suite's one list output
            found.setdefault("groups", len(value))
        meta = value if isinstance(value, dict) else getattr(value, "metadata", None) or {}
        for key, item in meta.items():
            found.setdefault(key, item)
    parts = [f"{found['groups']:.0f} group(s)"] if "groups" in found else []
    parts += [fmt(found[key]) for key, fmt in FORMATS if _shown(found.get(key))]
    return ", ".join(part for part in parts if part)


def _shown(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, (int, float)) for v in value.values())
    return isinstance(value, (int, float, str)) and not isinstance(value, bool) and value != ""
