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
    """The pipeline's outputs by name (one unnamed output is called ``output``)."""
    outputs = getattr(task, "outputs", None) or {}
    return dict(outputs) if outputs else {"output": task.output}


def summary_lines(outputs: Dict[str, Any]) -> list:
    """A table of the outputs: where each is, and the figures in its metadata."""
    lines = ["| output | figures | path |", "|---|---|---|"]
    for name, artifact in outputs.items():
        figures = ", ".join(f"{k}={_short(v)}" for k, v in sorted(artifact.metadata.items())
                            if isinstance(v, (int, float)) and not isinstance(v, bool))
        lines.append(f"| {name} | {figures} | {artifact.path} |")
    return lines


def _short(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
