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

With ``store`` (an S3-compatible server's bucket and prefix), the harness also moves bytes
as the KFP launcher of an open-source backend does: every artifact URI becomes an object in
the store (``s3://BUCKET/PREFIX/<task>/<name>``), the task reads and writes it at the path
KFP derives from that URI (``/s3/BUCKET/...``, a private folder mounted there), inputs are
downloaded before the task and outputs uploaded after it, and the bytes of each direction
are counted per task and per artifact type. Whatever a step writes to the store itself (a
data root) is not counted: that is the traffic the launcher does not see.

Two more behaviours of a backend, for tests that need them:

- ``kill={task: point}``: the task's first attempt runs until it reaches the named pause
  point (``TFKFP_TEST_PAUSE_AT``) and is killed there like a preempted pod; then, as a
  task with ``set_retry`` is, it runs again in a new "pod" with the same executor input (so
  the same output URIs). A failed attempt's outputs are not uploaded, as the launcher does.
- ``cache``: a dict kept by the caller across runs, as the backend's cache database is. A
  task whose command, input parameters and input artifact URIs match an earlier successful
  run does not run: its earlier executor output (the earlier run's artifact URIs) is
  handed to the next tasks, as a KFP cache hit is. Tasks named in ``uncached`` always run
  (``set_caching_options(False)``, which kfp.local does not report to the handler).

It needs ``unshare`` and the right to mount (root); ``isolation_available()`` says whether
this machine has them.
"""

import contextlib
import copy
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Tuple

# Runs inside the new mount namespace: keep a view of the real root at $alias, hide the
# root under an empty tmpfs, mount the task's own folder back, drop the view, run the task.
_ISOLATE = """
root=$1; alias=$2; task=$3; view=$4; shift 4
mount --make-rprivate /
mount --bind "$root" "$alias"
mount -t tmpfs tmpfs "$root"
mkdir -p "$task"
mount --bind "$alias${task#"$root"}" "$task"
umount "$alias"
if [ -n "$view" ]; then mount --bind "$view" /s3; fi
exec "$@"
"""

# Runs the task with a pause point set and kills its whole process group once the task says
# it paused there, as a node losing the pod would; exits 137 (SIGKILL) like a killed pod.
_KILL_AT_PAUSE = """
import os, signal, subprocess, sys
point, command = sys.argv[1], sys.argv[2:]
env = dict(os.environ, TFKFP_TEST_PAUSE_AT=point)
child = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
for line in child.stderr:
    sys.stderr.write(line)
    if line.strip() == "tfkfp: paused at " + point:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        sys.exit(137)
sys.exit(child.wait())
"""


def isolation_available() -> bool:
    """Whether this machine can run a task in a private mount namespace."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@dataclasses.dataclass(frozen=True)
class Store:
    """Where the launcher keeps artifacts: ``s3://bucket/prefix`` (the endpoint and keys are
    the environment's, as the tasks see them)."""

    bucket: str
    prefix: str

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}/{key}"


@contextlib.contextmanager
def isolated_tasks(store: Store | None = None, *, kill: Dict[str, str] | None = None,
                   cache: Dict[str, str] | None = None,
                   uncached: Tuple[str, ...] = ()) -> Iterator[List[Dict[str, Any]]]:
    """Within the block, every SubprocessRunner task sees only copies of its own inputs
    (downloaded from ``store`` and uploaded to it, when given; ``kill`` and ``cache`` as in
    the module docstring).

    Yields a list that gets one entry per task run: its task folder, the inputs copied and,
    with a store, the bytes ``downloaded`` and ``uploaded`` by artifact type, and ``moved``:
    (direction, artifact name, type, bytes) for each artifact; ``attempts`` (one status per
    attempt: ``killed``, ``failed``, ``succeeded``) or ``cached`` for a cache hit.
    """
    from kfp.local import subprocess_task_handler

    handler = subprocess_task_handler.SubprocessTaskHandler
    original_run = handler.run
    seen: List[Dict[str, Any]] = []
    to_kill = dict(kill or {})

    def run(self):
        root = os.path.abspath(self.pipeline_root)
        task = _Task.of(self.full_command)
        key = _cache_key(task)
        hit = _cached(task, key, cache, uncached)
        if hit is not None:
            seen.append(hit)
            return _status(True)
        point = _take_kill_point(to_kill, task)
        record = {"attempts": []}
        seen.append(record)
        while True:
            status = _attempt(self, task, original_run, root, store, record, point)
            if point is None or record["attempts"][-1] != "killed":
                break
            point = None  # the retry runs whole, as set_retry's next pod does
        if cache is not None and record["attempts"][-1] == "succeeded":
            cache[key] = _executor_output(task)
        return status

    handler.run = run
    try:
        yield seen
    finally:
        handler.run = original_run


@dataclasses.dataclass(frozen=True)
class _Task:
    """One task run's command, with its executor input (the JSON after
    ``--executor_input``) parsed once."""

    command: List[str]
    at: int  # where the executor input is in the command
    executor_input: Dict[str, Any]

    @classmethod
    def of(cls, command: List[str]) -> "_Task":
        at = command.index("--executor_input") + 1
        return cls(command, at, json.loads(command[at]))

    @property
    def output_file(self) -> str:
        """Where the task writes its executor output; its folder is the task's own."""
        return self.executor_input["outputs"]["outputFile"]

    @property
    def name(self) -> str:
        return os.path.basename(os.path.dirname(self.output_file))


def _attempt(handler, task: _Task, original_run, root: str, store: Store | None,
             record: Dict[str, Any], point: str | None):
    """One pod's worth of a task: inputs in, the command (killed at ``point`` if given),
    outputs up when it succeeded."""
    with tempfile.TemporaryDirectory(prefix="kfp-launcher-") as scratch:
        command, details = _isolate(task, root, scratch, store, point)
        moved = details.pop("moved", [])  # every attempt's downloads count, as they cost
        record.update(details)
        record.setdefault("moved", []).extend(moved)
        saved, handler.full_command = handler.full_command, command
        try:
            status = original_run(handler)
        finally:
            handler.full_command = saved
        succeeded = status == _status(True)
        record["attempts"].append("succeeded" if succeeded else
                                  "killed" if point is not None else "failed")
        if store is not None:
            outputs = record.pop("outputs")
            record["uploaded"] = _upload_outputs(outputs, scratch, record["moved"]) \
                if succeeded else {}  # the launcher uploads nothing of a failed attempt
        return status


def _status(succeeded: bool):
    from kfp.local import status

    return status.Status.SUCCESS if succeeded else status.Status.FAILURE


def _take_kill_point(to_kill: Dict[str, str], task: _Task) -> str | None:
    """The pause point to kill this task at, once per named task (the first that runs)."""
    for named in list(to_kill):
        if task.name.startswith(named):
            return to_kill.pop(named)
    return None


def _cache_key(task: _Task) -> str:
    """What a backend's cache key holds: the component's command, the input parameter
    values and the input artifacts (their URIs here); not the run's output locations."""
    inputs = task.executor_input.get("inputs", {})
    artifacts = {name: [a.get("uri") for a in entry.get("artifacts", [])]
                 for name, entry in inputs.get("artifacts", {}).items()}
    return json.dumps([task.command[:task.at - 1], task.command[task.at + 1:],
                       inputs.get("parameterValues", {}), artifacts], sort_keys=True)


def _cached(task: _Task, key: str, cache: Dict[str, str] | None,
            uncached: Tuple[str, ...]) -> Dict[str, Any] | None:
    """On a cache hit, write the earlier executor output where this run's task reads it and
    return the task's record; else None."""
    if cache is None or key not in cache or task.name.startswith(uncached):
        return None
    os.makedirs(os.path.dirname(task.output_file), exist_ok=True)
    with open(task.output_file, "w", encoding="utf-8") as f:
        f.write(cache[key])
    return {"task_root": os.path.dirname(task.output_file), "cached": True, "moved": [],
            "inputs": {}}


def _executor_output(task: _Task) -> str:
    with open(task.output_file, encoding="utf-8") as f:
        return f.read()


def _isolate(task: _Task, root: str, scratch: str, store: Store | None,
             kill_at: str | None = None):
    # an attempt rewrites the URIs in its own copy, so a retry starts from the task's
    executor_input = copy.deepcopy(task.executor_input)
    command, at = task.command, task.at
    task_root = os.path.dirname(task.output_file)
    if os.path.commonpath([root, task_root]) != root:
        raise AssertionError(f"task folder {task_root} is outside the pipeline root {root}")
    record: Dict[str, Any] = {"task_root": task_root}
    view = ""
    if store is None:
        record["inputs"] = _copy_inputs(executor_input, os.path.join(scratch, "inputs"), root)
    else:
        view = os.path.join(scratch, "s3")
        os.makedirs(view)
        record["inputs"], record["downloaded"], record["moved"] = _download_inputs(
            executor_input, view)
        record["outputs"] = _store_outputs(executor_input, root, store)
        os.makedirs("/s3", exist_ok=True)
    os.makedirs(task_root, exist_ok=True)
    alias = os.path.join(scratch, "root-view")
    os.makedirs(alias)
    command = [*command[:at], json.dumps(executor_input), *command[at + 1:]]
    if kill_at is not None:
        command = [sys.executable, "-c", _KILL_AT_PAUSE, kill_at, *command]
    wrapped = ["unshare", "-m", "sh", "-ec", _ISOLATE, "isolate", root, alias, task_root,
               view, *command]
    return wrapped, record


def _artifacts(executor_input: Dict[str, Any], side: str):
    """(name, index, artifact entry) of every input or output artifact."""
    for name, entry in executor_input.get(side, {}).get("artifacts", {}).items():
        for i, artifact in enumerate(entry.get("artifacts", [])):
            yield name, i, artifact


def _kind(artifact: Dict[str, Any]) -> str:
    return artifact.get("type", {}).get("schemaTitle", "system.Artifact").split(".")[-1]


def _download_inputs(executor_input: Dict[str, Any], view: str):
    """Download every input artifact in the store into view (mounted at /s3), as the
    launcher does before the task; local inputs (an importer of a local path) are uploaded
    first, as a user would have to. Returns the inputs and the bytes by artifact type."""
    from tfkfp.components.common.platform import object_store

    inputs, moved, each = {}, {}, []
    for name, i, artifact in _artifacts(executor_input, "inputs"):
        uri = artifact.get("uri", "")
        if not uri.startswith("s3://"):
            continue  # the suite's own local-runner URIs are rewritten by their producer
        local = os.path.join(view, uri[len("s3://"):])
        os.makedirs(os.path.dirname(local), exist_ok=True)
        if object_store.exists(uri):  # a folder (key prefix) or one object
            object_store.copy(uri, local)
        size = _bytes(local)
        moved[_kind(artifact)] = moved.get(_kind(artifact), 0) + size
        each.append(("downloaded", name, _kind(artifact), size))
        inputs[f"{name}[{i}]"] = uri
    return inputs, moved, each


def _store_outputs(executor_input: Dict[str, Any], root: str, store: Store):
    """Point every output artifact at the store (its path becomes /s3/...); the list of
    (uri, type) to upload after the task."""
    outputs = []
    for name, _, artifact in _artifacts(executor_input, "outputs"):
        uri = artifact["uri"]
        if uri.startswith("/"):
            artifact["uri"] = uri = store.uri(os.path.relpath(uri, root))
        outputs.append((uri, name, _kind(artifact)))
    return outputs


def _upload_outputs(outputs, scratch: str, each: List) -> Dict[str, int]:
    """Upload what the task wrote at each output's /s3 path, as the launcher does after it;
    the bytes by artifact type (and per artifact, appended to ``each``)."""
    from tfkfp.components.common.platform import object_store

    moved: Dict[str, int] = {}
    for uri, name, kind in outputs:
        local = os.path.join(scratch, "s3", uri[len("s3://"):])
        if not os.path.exists(local):
            continue  # a failed task, or an output it did not write
        object_store.copy(local, uri)
        size = _bytes(local)
        moved[kind] = moved.get(kind, 0) + size
        each.append(("uploaded", name, kind, size))
    return moved


def _bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, f))
               for folder, _, files in os.walk(path) for f in files)


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
