"""Run local pipeline tasks the way a Kubeflow Pipelines backend runs its pods.

On a real backend each task runs in its own pod: the KFP launcher downloads the task's own
input artifacts to local paths, the task writes its outputs, and the launcher uploads them.
Nothing else of the pipeline root is there. ``kfp.local`` runs every task on one shared
filesystem, so a task that reads a path inside another task's output folder works locally
and fails on a cluster.

``isolated_tasks()`` closes that gap for ``kfp.local.SubprocessRunner``: before a task runs,
each of its input artifacts is copied into a fresh folder outside the pipeline root and the
executor input is rewritten to point at the copies; the task then runs in a private mount
namespace in which the pipeline root is an empty tmpfs with only the task's own folder
mounted back. Tasks of a ParallelFor run at the same time, each in its own namespace.

It needs ``unshare`` and the right to mount (root); ``isolation_available()`` says whether
this machine has them.
"""

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, Iterator, List

# Runs inside the new mount namespace: keep a view of the real root at $alias, hide the
# root under an empty tmpfs, mount the task's own folder back, drop the view, run the task.
_ISOLATE = """
root=$1; alias=$2; task=$3; shift 3
mount --make-rprivate /
mount --bind "$root" "$alias"
mount -t tmpfs tmpfs "$root"
mkdir -p "$task"
mount --bind "$alias${task#"$root"}" "$task"
umount "$alias"
exec "$@"
"""


def isolation_available() -> bool:
    """Whether this machine can run a task in a private mount namespace."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@contextlib.contextmanager
def isolated_tasks() -> Iterator[List[Dict[str, Any]]]:
    """Within the block, every SubprocessRunner task sees only copies of its own inputs.

    Yields a list that gets one entry per task run: its task folder and the inputs copied.
    """
    from kfp.local import subprocess_task_handler

    handler = subprocess_task_handler.SubprocessTaskHandler
    original_run = handler.run
    seen: List[Dict[str, Any]] = []

    def run(self):
        root = os.path.abspath(self.pipeline_root)
        with tempfile.TemporaryDirectory(prefix="kfp-launcher-") as scratch:
            command, record = _isolate(self.full_command, root, scratch)
            seen.append(record)
            saved, self.full_command = self.full_command, command
            try:
                return original_run(self)
            finally:
                self.full_command = saved

    handler.run = run
    try:
        yield seen
    finally:
        handler.run = original_run


def _isolate(command: List[str], root: str, scratch: str):
    at = command.index("--executor_input") + 1
    executor_input = json.loads(command[at])
    copied = _copy_inputs(executor_input, os.path.join(scratch, "inputs"), root)
    task_root = os.path.dirname(executor_input["outputs"]["outputFile"])
    if os.path.commonpath([root, task_root]) != root:
        raise AssertionError(f"task folder {task_root} is outside the pipeline root {root}")
    os.makedirs(task_root, exist_ok=True)
    alias = os.path.join(scratch, "root-view")
    os.makedirs(alias)
    command = [*command[:at], json.dumps(executor_input), *command[at + 1:]]
    wrapped = ["unshare", "-m", "sh", "-ec", _ISOLATE, "isolate", root, alias, task_root,
               *command]
    return wrapped, {"task_root": task_root, "inputs": copied}


def _copy_inputs(executor_input: Dict[str, Any], into: str, root: str) -> Dict[str, str]:
    """Copy every input artifact the launcher would download; rewrite its URI."""
    copied = {}
    artifacts = executor_input.get("inputs", {}).get("artifacts", {})
    for name, entry in artifacts.items():
        for i, artifact in enumerate(entry.get("artifacts", [])):
            source = artifact.get("uri", "")
            if not source.startswith("/"):
                continue  # a remote URI: every pod reads it the same way
            target = os.path.join(into, name, str(i), os.path.basename(source) or "artifact")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, target)
            elif os.path.exists(source):
                shutil.copy2(source, target)
            artifact["uri"] = target
            copied[f"{name}[{i}]"] = source
    return copied
