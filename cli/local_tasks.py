"""The local runner's task processes die with the process that runs the pipeline.

kfp.local's SubprocessRunner starts each task with ``subprocess.Popen`` in
``subprocess_task_handler.run_local_subprocess``, as ``sh -ec '... python -m
kfp.dsl.executor_main ...'``. A ``tfkfp run`` killed with SIGKILL runs no exit code, and its
task ran on to the end, reparented to PID 1. For the length of a run,
``tasks_die_with_this_process`` puts in that function's place one that starts the task with
a parent-death signal (common.platform.lifeline) and has its shell ``exec`` the task's
Python: the kernel does not pass the request on to a shell's children. The signal is
SIGTERM, as when KFP cancels a pod: the task removes its scratch folders and stops what it
started (cluster jobs, worker processes, which have their own parent-death signal) on the
way out.

Each task's ``TMPDIR`` is one folder per run (``run_temp_folder``), removed when the run
ends: kfp's launch command writes the component's source into ``$(mktemp -d)`` and never
removes it, which left a ``tmp.*/ephemeral_component.py`` folder in the system's temp folder
per task. A run killed with SIGKILL leaves its folder to the next run (common.platform.scratch).
"""

import contextlib
import functools
import os
import re
import signal
import subprocess
import tempfile
from typing import Dict, Iterator, List

from tfkfp.components.common.platform import lifeline, scratch

EXECUTOR_MODULE = "kfp.dsl.executor_main"
RUNTIME = "_KFP_RUNTIME=true "  # begins kfp's launch of the executor (python3 already replaced)
_EXEC_EXECUTOR = re.compile(r"(_KFP_RUNTIME=true )(?!exec )")
_EXEC_INNER_SHELL = re.compile(r'(&& )(?="\$0" "\$@")')  # kfp's pip-install wrapper
RUN_TEMP_PREFIX = "tfkfp-run-tmp-"  # a run's temp folder, in the system's


@contextlib.contextmanager
def run_temp_folder() -> Iterator[str]:
    """A private folder in the system's temp folder for one run's tasks, removed when the
    block ends; those that killed runs left are removed first."""
    parent = tempfile.gettempdir()
    scratch.remove_abandoned(parent, RUN_TEMP_PREFIX)
    with scratch.owned_dir(parent, RUN_TEMP_PREFIX) as folder:
        yield folder


@contextlib.contextmanager
def tasks_die_with_this_process(temp_folder: str = "") -> Iterator[None]:
    """While the block runs, every task kfp.local's SubprocessRunner starts gets SIGTERM when
    this process (or the thread that started the task) dies, however it dies; with
    ``temp_folder``, it is the task's TMPDIR."""
    from kfp.local import subprocess_task_handler as handler

    saved = handler.run_local_subprocess
    handler.run_local_subprocess = functools.partial(run_task_process,
                                                     temp_folder=temp_folder)
    try:
        yield
    finally:
        handler.run_local_subprocess = saved


def run_task_process(full_command: List[str], env_vars: Dict[str, str] | None = None,
                     temp_folder: str = "") -> int:
    """kfp.local's ``run_local_subprocess``, the task's Python exec'd and bound to this
    process's life.

    Args:
        full_command: The task's command, as kfp.local built it.
        env_vars: Variables added to this process's environment for the task.
        temp_folder: The task's TMPDIR (empty: this process's).

    Returns:
        The task's exit code; its output is printed line by line, as kfp prints it.
    """
    added = {**(env_vars or {}), **({"TMPDIR": temp_folder} if temp_folder else {})}
    env = {**os.environ, **added} if added else None
    with lifeline.popen(exec_python(full_command), sig=signal.SIGTERM, env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                        bufsize=1) as process:
        for line in iter(process.stdout.readline, ""):
            print(line, end="")
        print("\n")  # kfp's separator after a task's output
        return process.wait()


def exec_python(full_command: List[str]) -> List[str]:
    """The task's command with each shell ``exec``-ing its last command (the executor, and the
    inner shell where kfp wraps it in a pip install), so the Python process that runs the
    component is this process's own child. The component's source, after the launch, is kept.

    Raises:
        RuntimeError: The command does not launch kfp's executor as expected (kfp changed).
    """
    launches = [i for i, part in enumerate(full_command)
                if RUNTIME in part and EXECUTOR_MODULE in part]
    if len(launches) != 1:
        shown = [part[:120] for part in full_command[:3]]
        raise RuntimeError(f"expected one command element running '{RUNTIME}python -m "
                           f"{EXECUTOR_MODULE}', found {len(launches)} in {shown}; has kfp "
                           "changed how it launches Python components?")
    launch = launches[0]
    command = [_EXEC_INNER_SHELL.sub(r"\1exec ", part) for part in full_command[:launch]]
    return [*command, _EXEC_EXECUTOR.sub(r"\1exec ", full_command[launch]),
            *full_command[launch + 1:]]
