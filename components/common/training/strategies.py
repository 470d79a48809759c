"""What a ``tf.distribute`` strategy name means, in one table (``STRATEGIES``): the processes
it runs as, where its replicas run (a launcher's entry may refuse some: a TFJob has no TPU),
what it allows of Keras, what must be there before any work, and how its strategy object is
built.

The checks and cluster shape beside it, train (launchers, worker, loop) and
diagnose_bottleneck read the table here instead of naming strategies, so adding a strategy
is a change to this file only.
A process of a multi-process strategy knows which task of the cluster it is from
``TF_CONFIG`` (``ClusterTask``: a cluster's task, not the task a model learns). It imports no
TensorFlow at module scope: builders import it when they run, in the process that trains."""

import dataclasses
import json
import logging
import os
from typing import Any, Callable, Dict, List, Tuple

from tfkfp.components.common.platform import choices
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError

log = logging.getLogger("tfkfp")


def _default(config: TrainConfig):
    import tensorflow as tf

    return tf.distribute.get_strategy()


def _one_device(config: TrainConfig):
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


def _mirrored(config: TrainConfig):
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    devices = gpus or tf.config.list_logical_devices("CPU")
    if len(devices) == 1:
        log.warning("strategy 'mirrored' found one device (%s): it trains one replica, "
                    "which uses every CPU core through TensorFlow's threads", devices[0].name)
    return tf.distribute.MirroredStrategy([d.name for d in devices])


def _multi_worker_mirrored(config: TrainConfig):
    import tensorflow as tf

    return tf.distribute.MultiWorkerMirroredStrategy()


def _parameter_server(config: TrainConfig):
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.ParameterServerStrategy(resolver)


def _tpu(config: TrainConfig):
    import tensorflow as tf

    resolver = resolve_tpu(config.tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _tpu_found(config: TrainConfig) -> None:
    resolve_tpu(config.tpu)


def _nothing_to_check(config: TrainConfig) -> None:
    """Strategies that run on whatever devices this process has need nothing up front."""


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One strategy name's meaning. Field defaults describe a strategy that trains in one
    process on one device."""

    name: str
    build: Callable[[TrainConfig], Any]  # the tf.distribute object, in the training process
    # TF_CONFIG task types it runs as, in launch order: "chief" (one), "worker" (``workers``),
    # "ps" (``parameter_servers``). ("chief",) alone: it trains in the caller's process.
    roles: Tuple[str, ...] = ("chief",)
    # Task types that only serve the chief (a tf.distribute.Server) and never finish.
    servers: Tuple[str, ...] = ()
    # Where its replicas run: "one" device, every "local" GPU (else the CPU), the devices of
    # every worker of a "cluster", or a "tpu"'s cores.
    devices: str = "one"
    sync: bool = True  # replicas step together (False: workers step on their own)
    batch_callbacks: bool = True  # Keras calls per-batch hooks (not under parameter servers)
    # Fails, before any work, when what the strategy runs on is not there.
    preflight: Callable[[TrainConfig], None] = _nothing_to_check

    @property
    def multi_process(self) -> bool:
        return self.roles != ("chief",)


STRATEGIES: Dict[str, Strategy] = {s.name: s for s in (
    Strategy("default", _default),
    Strategy("one_device", _one_device),
    Strategy("mirrored", _mirrored, devices="local"),
    Strategy("multi_worker_mirrored", _multi_worker_mirrored, roles=("worker",),
             devices="cluster"),
    Strategy("parameter_server", _parameter_server, roles=("chief", "worker", "ps"),
             servers=("worker", "ps"), devices="cluster", sync=False, batch_callbacks=False),
    Strategy("tpu", _tpu, devices="tpu", preflight=_tpu_found),
)}


def get(name: str) -> Strategy:
    """The table entry for ``name``, or a TrainConfigError naming the known strategies."""
    return choices.entry(STRATEGIES, name, "strategy", TrainConfigError)


def names(**properties: Any) -> Tuple[str, ...]:
    """Strategy names in table order whose properties have these values, e.g.
    ``names(multi_process=False)``."""
    return choices.names_where(STRATEGIES, **properties)


def make_strategy(config: TrainConfig):
    """The strategy object, created in the process that trains (or coordinates)."""
    return get(config.strategy).build(config)


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


@dataclasses.dataclass(frozen=True)
class ClusterTask:
    """One task of a cluster, as ``TF_CONFIG`` names it."""

    type: str  # chief, worker or ps
    index: int

    @property
    def name(self) -> str:
        return f"{self.type}-{self.index}"


def current_cluster_task() -> ClusterTask | None:
    """This process's task from ``TF_CONFIG``, or None outside a cluster."""
    body = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = body.get("task")
    return ClusterTask(task["type"], int(task["index"])) if task else None


def is_chief(task: ClusterTask | None) -> bool:
    return task is None or task.type == "chief" or (
        task.type == "worker" and task.index == 0 and "chief" not in _cluster_spec())


def _cluster_spec() -> Dict[str, List[str]]:
    return json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})


def run_server(task: ClusterTask, workers: int) -> None:
    """Serve as one of a strategy's ``servers`` tasks until killed."""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    # On few cores a server with too few inter-op threads can deadlock under load.
    proto = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=workers + 1)
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=task.type,
                                  task_index=task.index, protocol="grpc", config=proto,
                                  start=True)
    server.join()
