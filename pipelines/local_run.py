"""Run a pipeline on this machine with the KFP local runner, and summarise what it made."""

import os
from typing import Any, Dict

from tfkfp.pipelines import registry


def run_local(name: str, parameters: Dict[str, Any], pipeline_root: str):
    """Run the named pipeline with ``kfp.local.SubprocessRunner(use_venv=False)``; returns
    the pipeline's task (its ``.outputs`` hold the pipeline outputs)."""
    from kfp import local

    pipeline = registry.load(name)
    os.makedirs(pipeline_root, exist_ok=True)
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=os.path.abspath(pipeline_root), raise_on_error=True)
    return pipeline(**parameters)


def outputs_of(task) -> Dict[str, Any]:
    """The pipeline's outputs by name; none for a pipeline that declares none (kfp's
    ``task.output`` then raises, as it does for several)."""
    return dict(getattr(task, "outputs", None) or {})


def latest_run(pipeline_root: str) -> str:
    """The folder of the newest run under ``pipeline_root`` (the local runner names it)."""
    runs = [os.path.join(pipeline_root, n) for n in os.listdir(pipeline_root)]
    runs = [r for r in runs if os.path.isdir(r)]
    return max(runs, key=os.path.getmtime) if runs else pipeline_root


def summary_lines(outputs: Dict[str, Any], pipeline_root: str = "") -> list:
    """A table of the outputs: where each is, and the figures in its metadata."""
    if not outputs:
        where = latest_run(pipeline_root) if pipeline_root else "the pipeline root"
        return [f"The pipeline has no outputs; every task's outputs are under {where}"]
    lines = ["| output | figures | path |", "|---|---|---|"]
    for name, artifact in outputs.items():
        figures = ", ".join(f"{k}={_short(v)}" for k, v in sorted(artifact.metadata.items())
                            if isinstance(v, (int, float)) and not isinstance(v, bool))
        lines.append(f"| {name} | {figures} | {artifact.path} |")
    return lines


def _short(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
