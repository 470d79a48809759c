"""Run a pipeline on this machine with the KFP local runner, and summarise what it made.

The console gets a line per task as it starts and ends (its time and key figures), the
progress its running tasks report (progress_view; none when ``progress`` is off) and the
summary; every task's full log goes to ``<run folder>/logs/<task>.log`` (task_logs). A task
that fails ends the run with the component's own error message.
"""

import dataclasses
import os
import textwrap
import time
from typing import Any, Dict, List, TextIO, Tuple

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
              verbose: bool = False, console: TextIO | None = None,
              progress: bool = True) -> LocalRun:
    """Run the named pipeline; see run_pipeline. The run goes by the name a user types
    (``training``), not the compiled one (``tfkfp-training``)."""
    return run_pipeline(registry.load(name), parameters, pipeline_root, verbose, console,
                        name=name, progress=progress)


def run_pipeline(pipeline, parameters: Dict[str, Any], pipeline_root: str,
                 verbose: bool = False, console: TextIO | None = None,
                 name: str = "", progress: bool = True) -> LocalRun:
    """Run ``pipeline`` with ``kfp.local.SubprocessRunner(use_venv=False)``, a line per task
    on ``console`` (default stdout) and, with ``progress``, what running tasks report;
    ``verbose`` streams every task's output there instead. The run goes by ``name`` (default
    the pipeline's compiled name).
    Raises TaskFailed with the failed component's own message."""
    from kfp import local

    os.makedirs(pipeline_root, exist_ok=True)
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=os.path.abspath(pipeline_root), raise_on_error=True)
    started = time.monotonic()
    # a task dies with this process, even a SIGKILLed one (it would otherwise run on), and
    # its temp files (kfp's mktemp -d among them) go with the run's temp folder
    with run_temp_folder() as temp, tasks_die_with_this_process(temp), \
            TaskConsole(pipeline_root, console, verbose, progress) as tasks:
        try:
            task = pipeline(**parameters)
        except RuntimeError as err:
            failed = tasks.failed()
            if failed is None:
                raise
            raise TaskFailed(failed) from err
    specs = pipeline.component_spec.outputs or {}
    return LocalRun(name or pipeline.name, outputs_of(task),
                    {n: " ".join((s.description or "").split()) for n, s in specs.items()},
                    tasks.records, tasks.run_dir, tasks.log_dir, time.monotonic() - started)


def outputs_of(task) -> Dict[str, Any]:
    """The pipeline's outputs by name; none for a pipeline that declares none (kfp's
    ``task.output`` then raises, as it does for several)."""
    return dict(getattr(task, "outputs", None) or {})


WIDTH = 100  # the summary fits a terminal this wide; the full reports are in the artifacts


def summary_lines(run: LocalRun) -> List[str]:
    """What the run made, aligned as the demo's summary: an output (for a pipeline that
    declares none, each artifact its tasks made) with its key figures and the step and wall
    time that made it, its path under the run folder on the next line; then the decisions
    steps told in their logs. Reports (metrics, Markdown) and parameter outputs of tasks
    (group lists, gcp_resources) are internals: the artifacts keep them."""
    rows = _output_rows(run) if run.outputs else _task_rows(run)
    lines = ["", f"pipeline {run.name!r} finished in {run.seconds:.0f} s", ""]
    if not run.outputs:
        lines += ["The pipeline declares no outputs; what its tasks made:", ""]
    width = min(max((len(label) for label, _, _ in rows), default=0) + 2, 24)
    for label, figures_, path in rows:
        lines += _wrapped(figures_, label.ljust(width), " " * width)
        lines += [" " * width + path] if path else []
    told = [f"{t.name}: {account}" for t in run.tasks if (account := figures.told(t.name, t.log))]
    for account in told:
        lines += [""] + _wrapped(account, "", "    ")
    return lines + ["", f"{'run folder':<12}{shown_folder(run.run_dir)}",
                    f"{'task logs':<12}{_relative(run.log_dir, run.run_dir)}{os.sep} in it, "
                    "a file per task"]


def _output_rows(run: LocalRun) -> List[Tuple[str, str, str]]:
    rows = []
    for name, value in run.outputs.items():
        task, path = run.task_of(value), getattr(value, "path", None)
        shown = figures.key_figures({name: value}) if path else str(value)
        step = f"({task.name}, {task.seconds:.1f} s)" if task else ""
        rows.append((name, " ".join(p for p in (shown, step) if p),
                     _relative(where(value), run.run_dir) if path else ""))
    return rows


def _task_rows(run: LocalRun) -> List[Tuple[str, str, str]]:
    """Every artifact the tasks made but their reports; parameter outputs are internals."""
    rows = []
    for task in run.tasks:
        for name, value in task.outputs.items():
            if figures.is_report(value) or getattr(value, "path", None) is None:
                continue
            shown = figures.key_figures({name: value})
            rows.append((name, " ".join(p for p in (shown, f"({task.name}, "
                                                     f"{task.seconds:.1f} s)") if p),
                         _relative(where(value), run.run_dir)))
    return rows


def _wrapped(text: str, first: str, rest: str) -> List[str]:
    return textwrap.wrap(text, WIDTH - 1, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _relative(path: str, folder: str) -> str:
    """``path`` under ``folder`` as a relative path; a URI or a path elsewhere as it is."""
    if "://" in path or not folder:
        return path
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
    return path if relative.startswith("..") else relative


def shown_folder(folder: str) -> str:
    """The run folder relative to the working directory when it is under it."""
    relative = os.path.relpath(os.path.abspath(folder))
    return folder if relative.startswith("..") else relative


def where(artifact) -> str:
    """Where a user finds an artifact: its path here, or its URI when it is on an object
    store (whose path, /s3/... or /gcs/..., exists only inside the step)."""
    uri = getattr(artifact, "uri", "") or ""
    if "://" in uri and not uri.startswith("file://"):
        return uri
    return str(getattr(artifact, "path", artifact))


