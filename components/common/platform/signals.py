"""Stopping what a step started when KFP cancels the step.

Open-source KFP cancels a run by deleting its pods: each step's container gets SIGTERM, then
SIGKILL when the grace period ends. A step that started work outside its pod (a TFJob, a
TrainJob, a Vertex AI job) must stop that work on SIGTERM, or it runs on unwatched.
"""

import contextlib
import signal
import threading
from typing import Iterator

# KFP compiles a Python component into ``sh -ec '... _KFP_RUNTIME=true python3 -m
# kfp.dsl.executor_main ...'``. sh does not pass SIGTERM on to its child, and as a
# container's first process it ignores it, so Python never hears of the cancel.
EXECUTOR_LAUNCH = "_KFP_RUNTIME=true python3 -m kfp.dsl.executor_main"
EXEC_LAUNCH = "_KFP_RUNTIME=true exec python3 -m kfp.dsl.executor_main"


@contextlib.contextmanager
def sigterm_raises(what: str) -> Iterator[None]:
    """Inside this block SIGTERM raises SystemExit("<what> stopped by signal 15"), so the
    code that started outside work can stop it; the previous handler comes back after. A
    no-op off the main thread, where signal handlers cannot be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(f"{what} stopped by signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exec_python(component):
    """The KFP component with its command's shell replaced by Python (``exec``), so the
    step's Python process is the one that gets SIGTERM. Changes the component in place (the
    compiler and the local runners read its spec) and returns it, for use as a decorator
    above ``@dsl.component``."""
    container = component.component_spec.implementation.container
    command = list(container.command or [])
    scripts = [i for i, part in enumerate(command)
               if isinstance(part, str) and EXECUTOR_LAUNCH in part]
    if len(scripts) != 1:
        shown = [str(part)[:120] for part in command[:3]]
        raise ValueError(f"component {component.name}: expected one command element running "
                         f"{EXECUTOR_LAUNCH!r}, found {len(scripts)} in {shown}; has kfp "
                         "changed how it launches Python components?")
    command[scripts[0]] = command[scripts[0]].replace(EXECUTOR_LAUNCH, EXEC_LAUNCH)
    container.command = command
    return component
