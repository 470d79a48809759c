"""The local launcher: a multi-process strategy on one machine, one process per task on
loopback ports, each with its ``TF_CONFIG``, their logs streamed with a task prefix. The step
fails if any task fails, and every task is shut down whatever happens. The tasks' TensorFlow
servers listen on 127.0.0.1 only (see train/loopback.py)."""

import collections
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Deque, Dict, List, TextIO

from tfkfp.components.common.platform import lifeline
from tfkfp.components.common.platform.cpus import thread_environment
from tfkfp.components.common.platform.signals import sigterm_raises
from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import CONFIG_FILE, TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.common.training.strategies import ClusterTask
from tfkfp.components.train import loopback
from tfkfp.components.train.errors import WorkerFailed
from tfkfp.components.train.launchers.tail import TAIL_LINES, indented


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The processes of a multi-process strategy and their loopback addresses."""

    spec: Dict[str, List[str]]

    @property
    def tasks(self) -> List[ClusterTask]:
        return [ClusterTask(kind, i) for kind, hosts in self.spec.items()
                for i in range(len(hosts))]

    @property
    def chief(self) -> ClusterTask:
        return ClusterTask("chief", 0) if "chief" in self.spec else ClusterTask("worker", 0)

    def tf_config(self, task: ClusterTask) -> str:
        return json.dumps({"cluster": self.spec, "task": {"type": task.type,
                                                          "index": task.index}})


def local_cluster(shape: ClusterShape) -> Cluster:
    """The shape's tasks as processes on loopback ports (worker 0 leads when there is no
    chief)."""
    ports = iter(free_ports(sum(shape.replicas.values())))
    return Cluster({role: [f"127.0.0.1:{next(ports)}" for _ in range(n)]
                    for role, n in shape.replicas.items()})


def free_ports(count: int) -> List[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_cluster(config: TrainConfig, result_path: str, stream: TextIO | None = None) -> None:
    """Start the cluster, wait for the chief, and stop every process before returning."""
    stream = stream or sys.stderr
    cluster = local_cluster(ClusterShape.for_config(config))
    with tempfile.TemporaryDirectory(prefix="tfkfp-cluster-") as tmp:
        config_path = os.path.join(tmp, CONFIG_FILE)
        with open(config_path, "w") as f:
            f.write(config.to_json())
        env = {"PYTHONUNBUFFERED": "1", **loopback.environment(loopback.build(tmp)),
               **thread_environment(len(cluster.tasks))}  # the pod's CPUs, shared
        processes: Dict[ClusterTask, subprocess.Popen] = {}
        tails: Dict[ClusterTask, Deque[str]] = {}
        threads = []
        with sigterm_raises("training"):
            try:
                for task in cluster.tasks:
                    processes[task] = _start({**env, "TF_CONFIG": cluster.tf_config(task)},
                                             config_path, result_path)
                    tails[task] = collections.deque(maxlen=TAIL_LINES)
                    threads.append(_stream(processes[task], task, tails[task], stream))
                _wait(processes, cluster.chief, tails,
                      servers_linger=bool(strategies.get(config.strategy).servers))
            finally:
                _stop(processes.values())
                for thread in threads:
                    thread.join(timeout=5)


def _start(env: Dict[str, str], config_path: str, result_path: str) -> subprocess.Popen:
    # SIGKILL if the launcher dies, even by SIGKILL: no orphan keeps training or a port
    return lifeline.popen(
        [sys.executable, "-m", "tfkfp.components.train.worker", config_path, result_path],
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stream(process: subprocess.Popen, task: ClusterTask, tail: Deque[str], out: TextIO):
    def pump():
        for line in process.stdout:
            tail.append(line.rstrip("\n"))
            out.write(f"[{task.name}] {line}")
            out.flush()

    thread = threading.Thread(target=pump, name=f"log-{task.name}", daemon=True)
    thread.start()
    return thread


def _wait(processes: Dict[ClusterTask, subprocess.Popen], chief: ClusterTask, tails,
          servers_linger: bool):
    """Return when the chief (and, for multi-worker, every worker) has succeeded; raise as
    soon as any task fails."""
    while True:
        for task, process in processes.items():
            code = process.poll()
            if code not in (None, 0):
                time.sleep(0.5)  # let the log pump drain the failing task's last lines
                raise WorkerFailed(f"training task {task.name} failed with exit code {code}"
                                   f"{_signal_name(code)}; its last log lines:\n"
                                   f"{indented(tails[task])}")
        chief_done = processes[chief].poll() == 0
        if chief_done and (servers_linger or all(p.poll() == 0 for p in processes.values())):
            return
        time.sleep(0.2)


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return f" (killed by {signal.Signals(-code).name})"
        except ValueError:
            return ""
    return ""


def _stop(processes) -> None:
    alive = [p for p in processes if p.poll() is None]
    for process in alive:
        process.terminate()
    deadline = time.monotonic() + 10
    for process in alive:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
