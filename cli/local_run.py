"""Run a pipeline on this machine with the KFP local runner, and summarise what it made.

The console gets a line per task as it starts and ends (its time and key figures) and the
summary; every task's full log goes to ``<run folder>/logs/<task>.log`` (task_logs). A task
that fails ends the run with the component's own error message.
"""

import dataclasses
import os
import time
from typing import Any, Dict, List, TextIO

from tfkfp.cli import figures
from tfkfp.cli.local_tasks import run_temp_folder, tasks_die_with_this_process
from tfkfp.cli.task_logs import TaskConsole, TaskRecord
from tfkfp.pipelines import registry


class TaskFailed(RuntimeError):
    """A task of a local run failed: ``<task>: <the component's own error message>``."""

    def __init__(self, record: TaskRecord):
        super().__init__(f"{record.name}: {record.error}")
        self.record = record


@dataclasses.dataclass(frozen=True)
class LocalRun:
    name: str
    outputs: Dict[str, Any]  # the pipeline's outputs by name
    descriptions: Dict[str, str]  # what each output is (the pipeline's docstring)
    tasks: List[TaskRecord]  # in the order they started
    run_dir: str  # the folder kfp.local wrote the run's outputs under
    log_dir: str
    seconds: float

    def task_of(self, artifact: Any) -> TaskRecord | None:
        """The task that wrote ``artifact``."""
        uri = getattr(artifact, "uri", None)
        return next((t for t in self.tasks for out in t.outputs.values()
                     if uri is not None and getattr(out, "uri", None) == uri), None)


def run_local(name: str, parameters: Dict[str, Any], pipeline_root: str,
              verbose: bool = False, console: TextIO | None = None) -> LocalRun:
    """Run the named pipeline; see run_pipeline."""
    return run_pipeline(registry.load(name), parameters, pipeline_root, verbose, console)


def run_pipeline(pipeline, parameters: Dict[str, Any], pipeline_root: str,
                 verbose: bool = False, console: TextIO | None = None) -> LocalRun:
    """Run ``pipeline`` with ``kfp.local.SubprocessRunner(use_venv=False)``, a line per task
    on ``console`` (default stdout); ``verbose`` streams every task's output there too.
    Raises TaskFailed with the failed component's own message."""
    from kfp import local

    os.makedirs(pipeline_root, exist_ok=True)
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=os.path.abspath(pipeline_root), raise_on_error=True)
    started = time.monotonic()
    # a task dies with this process, even a SIGKILLed one (it would otherwise run on), and
    # its temp files (kfp's mktemp -d among them) go with the run's temp folder
    with run_temp_folder() as temp, tasks_die_with_this_process(temp), \
            TaskConsole(pipeline_root, console, verbose) as tasks:
        try:
            task = pipeline(**parameters)
        except RuntimeError as err:
            failed = tasks.failed()
            if failed is None:
                raise
            raise TaskFailed(failed) from err
    specs = pipeline.component_spec.outputs or {}
    return LocalRun(pipeline.name, outputs_of(task),
                    {n: " ".join((s.description or "").split()) for n, s in specs.items()},
                    tasks.records, tasks.run_dir, tasks.log_dir, time.monotonic() - started)


def outputs_of(task) -> Dict[str, Any]:
    """The pipeline's outputs by name; none for a pipeline that declares none (kfp's
    ``task.output`` then raises, as it does for several)."""
    return dict(getattr(task, "outputs", None) or {})


def summary_lines(run: LocalRun) -> List[str]:
    """A table of the outputs: what each is, its key figures (rates are the step's own
    throughput), the wall time of the step that wrote it, and where it is; for a pipeline
    that declares none, what its tasks made. Then the decisions steps told in their logs."""
    lines = ["", f"pipeline {run.name!r} finished in {run.seconds:.0f} s"]
    lines += _outputs_table(run) if run.outputs else _task_outputs_table(run)
    told = [f"{t.name}: {account}" for t in run.tasks if (account := figures.told(t.name, t.log))]
    lines += [""] + told if told else []
    return lines + ["", f"task logs: {run.log_dir}"]


def _outputs_table(run: LocalRun) -> List[str]:
    lines = ["", "| output | what it is | figures | step, wall time | path |",
             "|---|---|---|---|---|"]
    for name, artifact in run.outputs.items():
        task = run.task_of(artifact)
        wall = f"{task.name}, {task.seconds:.1f} s" if task else ""
        lines.append(f"| {name} | {_cell(run.descriptions.get(name, ''))} | "
                     f"{figures.key_figures({name: artifact})} | {wall} | "
                     f"{where(artifact)} |")
    return lines


def _task_outputs_table(run: LocalRun) -> List[str]:
    """Every task's outputs but its reports (metrics, Markdown) and summaries (a dict output,
    whose figures its artifacts carry): artifacts with their key figures and path, values
    (the gate's "deploy") as they are."""
    lines = ["", "The pipeline declares no outputs; what its tasks made:", "",
             "| task | output | figures | step wall time | path or value |",
             "|---|---|---|---|---|"]
    for task in run.tasks:
        for name, value in task.outputs.items():
            if figures.is_report(value) or isinstance(value, dict):
                continue
            path = getattr(value, "path", None)
            shown = figures.key_figures({name: value}) if path else ""
            lines.append(f"| {task.name} | {name} | {shown} | {task.seconds:.1f} s | "
                         f"{_cell(str(where(value) if path else value))} |")
    return lines


def where(artifact) -> str:
    """Where a user finds an artifact: its path here, or its URI when it is on an object
    store (whose path, /s3/... or /gcs/..., exists only inside the step)."""
    uri = getattr(artifact, "uri", "") or ""
    if "://" in uri and not uri.startswith("file://"):
        return uri
    return str(getattr(artifact, "path", artifact))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
