"""The local runner's console: a line per task as it starts and ends, every task's log in a file.

kfp.local prints each task's output (the executor's JSON, the component's log, and the
subprocess's stderr, which it merges into stdout: TensorFlow's C++ log among it) with
``print`` and logs its own progress through ``sys.stdout``. For the length of a run,
``TaskConsole`` points ``sys.stdout`` (and ``sys.stderr``, for the runner's warnings) at a
stream that sends what a task's thread writes to that task's log file (ParallelFor runs tasks
in threads) and the rest to ``pipeline.log``, both under ``<run folder>/logs/``; and it wraps
kfp.local's ``run_single_task_implementation`` to time each task, print its line, keep its
outputs and, when it fails, the component's own error message from its log. With
``verbose`` everything is streamed to the console as well; without it (and with
``progress``) the progress lines a running task logs are shown (progress_view). A task goes
by the name the Kubeflow UI, ``tfkfp check`` and the docs' graphs give it: its display name
(``taskInfo`` in the compiled YAML), which kfp.local's task executor knows and the task
runner does not.
"""

import builtins
import dataclasses
import io
import logging
import os
import re
import sys
import threading
import time
from typing import Any, Callable, Dict, List, TextIO

from tfkfp.cli import figures
from tfkfp.cli.progress_view import ProgressView

PIPELINE_LOG = "pipeline.log"


@dataclasses.dataclass
class TaskRecord:
    name: str  # the task's display name, as the UI shows it; "#k" for its k-th run
    log: str
    seconds: float = 0.0
    ok: bool | None = None  # None while it runs
    outputs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str = ""

    def line(self) -> str:
        if self.ok is None:
            return f"start  {self.name}"
        if not self.ok:
            return f"FAILED {self.name}  {self.seconds:.1f} s  its log: {self.log}"
        shown = [figures.key_figures(self.outputs), figures.told(self.name, self.log)]
        return f"done   {self.name}  {self.seconds:.1f} s  " + "; ".join(s for s in shown if s)


class _Streams(io.TextIOBase):
    """``sys.stdout`` during a run: each thread's writes to its task's log, others to the
    pipeline log (kept in memory until the run folder is known); echoed when verbose."""

    def __init__(self, console: TextIO, verbose: bool):
        super().__init__()
        self.console, self.verbose = console, verbose
        self.default: TextIO = io.StringIO()
        self.routes: Dict[int, TextIO] = {}
        self.listener: Callable[[int, str], None] | None = None  # sees a task's writes

    def write(self, text: str) -> int:
        ident = threading.get_ident()
        self.routes.get(ident, self.default).write(text)
        if self.listener is not None and ident in self.routes:
            self.listener(ident, text)
        if self.verbose:
            self.console.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in (self.default, *self.routes.values()):
            stream.flush()

    def writable(self) -> bool:
        return True


class TaskConsole:
    """A context manager around a local run; see the module docstring."""

    def __init__(self, pipeline_root: str, console: TextIO | None = None,
                 verbose: bool = False, progress: bool = True):
        self.root = os.path.abspath(pipeline_root)
        self.console = console or sys.stdout
        self.streams = _Streams(self.console, verbose)
        self.records: List[TaskRecord] = []
        self.run_dir = self.log_dir = ""
        self._lock = threading.RLock()
        self._saved: Dict[str, Any] = {}
        self._shown = threading.local()  # the display name of the task this thread runs
        self.view = ProgressView(self.console) if progress and not verbose else None
        self._tasks: Dict[int, str] = {}  # the task each running thread runs
        if self.view is not None:
            self.streams.listener = self._progress

    def __enter__(self) -> "TaskConsole":
        from kfp.local import task_dispatcher
        from kfp.local.orchestrator import task_executor

        root = logging.getLogger()
        self._saved = {"stdout": sys.stdout, "stderr": sys.stderr, "print": builtins.print,
                       "level": root.level, "handlers": root.handlers[:],
                       "task": task_dispatcher.run_single_task_implementation,
                       "execute": task_executor.execute_single_task}
        sys.stdout = sys.stderr = self.streams  # stderr: the runner's Python warnings
        root.handlers[:] = [logging.StreamHandler(self.streams)]  # the runner's own lines
        task_dispatcher.run_single_task_implementation = self._wrap(self._saved["task"])
        task_executor.execute_single_task = self._named(self._saved["execute"])
        if self.view is not None:
            self.view.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        from kfp.local import task_dispatcher
        from kfp.local.orchestrator import task_executor

        task_dispatcher.run_single_task_implementation = self._saved["task"]
        task_executor.execute_single_task = self._saved["execute"]
        if self.view is not None:
            self.view.__exit__(*exc_info)
        sys.stdout, sys.stderr = self._saved["stdout"], self._saved["stderr"]
        builtins.print = self._saved["print"]
        root = logging.getLogger()  # kfp swaps these per task, from several threads at once
        root.handlers[:], root.level = self._saved["handlers"], self._saved["level"]
        self.streams.flush()
        if self.log_dir:
            self.streams.default.close()
        elif exc_info[0] is not None:  # failed before any task ran: show what kfp said
            self.console.write(self.streams.default.getvalue())

    def failed(self) -> TaskRecord | None:
        return next((r for r in self.records if r.ok is False), None)

    def _named(self, execute: Callable) -> Callable:
        """kfp.local's ``execute_single_task``, noting the task's display name for _start
        (it then runs the task in this thread)."""
        def run(task_name, task_spec, *args, **kwargs):
            self._shown.name = task_spec.task_info.name or task_name
            try:
                return execute(task_name, task_spec, *args, **kwargs)
            finally:
                self._shown.name = ""

        return run

    def _wrap(self, run_task: Callable) -> Callable:
        def run(**kwargs):
            record = self._start(kwargs)
            started = time.monotonic()
            with open(record.log, "w", encoding="utf-8") as log:
                self._tasks[threading.get_ident()] = record.name
                self.streams.routes[threading.get_ident()] = log
                try:
                    outputs, status = run_task(**kwargs)
                finally:
                    del self.streams.routes[threading.get_ident()]
                    del self._tasks[threading.get_ident()]
                    record.seconds = time.monotonic() - started
            self._end(record, outputs, status.name == "SUCCESS")
            return outputs, status

        return run

    def _start(self, kwargs: Dict[str, Any]) -> TaskRecord:
        with self._lock:
            if not self.log_dir:  # the run's folder: the first under the root (a task in
                # a loop or a nested pipeline has its own folder inside it)
                task_dir = os.path.join(kwargs["pipeline_root"], kwargs["pipeline_resource_name"])
                first = os.path.relpath(os.path.abspath(task_dir), self.root).split(os.sep)[0]
                self._open_logs(os.path.join(self.root, first))
            name = (getattr(self._shown, "name", "")
                    or kwargs["component_name"].removeprefix("comp-"))
            runs = sum(1 for r in self.records if r.name.split(" #")[0] == name)
            if runs:
                name = f"{name} #{runs + 1}"
            record = TaskRecord(name, os.path.join(self.log_dir,
                                                   name.replace(" #", ".") + ".log"))
            self.records.append(record)
        self._say(record.line())
        if self.view is not None:
            self.view.started(record.name)
        return record

    def _end(self, record: TaskRecord, outputs: Dict[str, Any], ok: bool) -> None:
        record.outputs, record.ok = outputs, ok
        if self.view is not None:
            self.view.ended(record.name)
        if not ok:
            with open(record.log, encoding="utf-8", errors="replace") as f:
                record.error = task_error(f.read()) or "see its log"
        self._say(record.line())

    def _open_logs(self, run_dir: str) -> None:
        self.run_dir, self.log_dir = run_dir, os.path.join(run_dir, "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        early = self.streams.default.getvalue()
        path = os.path.join(self.log_dir, PIPELINE_LOG)
        self.streams.default = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        self.streams.default.write(early)
        self._say(f"logs   {self.log_dir}{os.sep}")

    def _progress(self, thread: int, text: str) -> None:
        task = self._tasks.get(thread)
        if task is not None:
            self.view.feed(task, text)

    def _say(self, line: str) -> None:
        with self._lock:
            if self.view is not None:
                self.view.say(line)
                return
            self.console.write(line + "\n")
            self.console.flush()


_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_CARETS = re.compile(r"^[\^~]+$")  # a traceback frame's pointer to the failing expression
_NATIVE_LOG = re.compile(r"^[IWEF]\d{4} ")  # absl's C++ log lines (TensorFlow's)


def task_error(log: str) -> str:
    """The last exception's message in a task's log, on one line ("" if there is none);
    exceptions from outside tfkfp keep their class name, which their message may need."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return ""
    indent = len(lines[starts[-1]]) - len(lines[starts[-1]].lstrip())
    rest = iter(lines[starts[-1] + 1:])
    for line in rest:  # the frames are indented deeper than the exception line after them
        # (a frame's caret markers can sit at any depth: they are never the exception)
        if line.strip() and len(line) - len(line.lstrip()) <= indent \
                and not _CARETS.match(line.strip()):
            break
    else:
        return ""
    match = _EXCEPTION.match(line.strip())
    if not match:
        return " ".join(line.split())
    text = [match["message"] or ""]
    for more in rest:  # a message of several lines ends at the first blank line
        if not more.strip() or _NATIVE_LOG.match(more.strip()):
            break
        text.append(more)
    message, cls = " ".join(" ".join(text).split()), match["cls"]
    if cls.startswith("tfkfp.") and message:
        return message
    short = cls.rsplit(".", 1)[-1]
    return f"{short}: {message}" if message else short
