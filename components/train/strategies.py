"""One parameter picks the ``tf.distribute`` strategy; the cluster shape for the multi-process
ones is described once and rendered as each process's ``TF_CONFIG``."""

import dataclasses
import json
import logging
import os
import socket
from typing import Dict, List

from tfkfp.components.train.config import TrainConfig, TrainConfigError
from tfkfp.components.train.shape import ClusterShape

log = logging.getLogger("tfkfp")


@dataclasses.dataclass(frozen=True)
class Task:
    type: str  # chief, worker or ps
    index: int

    @property
    def name(self) -> str:
        return f"{self.type}-{self.index}"


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The processes of a multi-process strategy and their loopback addresses."""

    spec: Dict[str, List[str]]

    @property
    def tasks(self) -> List[Task]:
        return [Task(kind, i) for kind, hosts in self.spec.items() for i in range(len(hosts))]

    @property
    def chief(self) -> Task:
        return Task("chief", 0) if "chief" in self.spec else Task("worker", 0)

    def tf_config(self, task: Task) -> str:
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


def current_task() -> Task | None:
    """This process's task from ``TF_CONFIG``, or None outside a cluster."""
    body = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = body.get("task")
    return Task(task["type"], int(task["index"])) if task else None


def is_chief(task: Task | None) -> bool:
    return task is None or task.type == "chief" or (
        task.type == "worker" and task.index == 0 and "chief" not in _cluster_spec())


def _cluster_spec() -> Dict[str, List[str]]:
    return json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})


def make_strategy(config: TrainConfig):
    """The strategy object, created in the process that trains (or coordinates)."""
    import tensorflow as tf

    name = config.strategy
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = gpus or tf.config.list_logical_devices("CPU")
        if len(devices) == 1:
            log.warning("strategy 'mirrored' found one device (%s): it trains one replica, "
                        "which uses every CPU core through TensorFlow's threads",
                        devices[0].name)
        return tf.distribute.MirroredStrategy([d.name for d in devices])
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "parameter_server":
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.ParameterServerStrategy(resolver)
    return _tpu_strategy(config.tpu)


def resolve_tpu(tpu: str):
    """The TPU cluster resolver, or a TrainConfigError saying no TPU is there."""
    import tensorflow as tf

    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or None)
        if not resolver.cluster_spec().as_dict() and not resolver.master():
            raise ValueError("the resolver found no TPU workers")
    except Exception as err:  # the resolver raises several types when there is no TPU
        where = f"TPU {tpu!r}" if tpu else "a local or Cloud TPU (tpu='' looks for one)"
        raise TrainConfigError(
            f"strategy 'tpu' needs {where}, and none was found: {err}. Run on a TPU VM or "
            "set tpu=<name>, or choose another strategy") from err
    return resolver


def _tpu_strategy(tpu: str):
    import tensorflow as tf

    resolver = resolve_tpu(tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def run_server(task: Task, workers: int) -> None:
    """Serve as a parameter-server-strategy worker or PS until killed."""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    # On few cores a server with too few inter-op threads can deadlock under load.
    proto = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 1)
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=task.type,
                                  task_index=task.index, protocol="grpc", config=proto,
                                  start=True)
    server.join()

