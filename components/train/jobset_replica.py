"""Who a replica of a Kubeflow Trainer v2 TrainJob is, and its ``TF_CONFIG``, from the
stable identities JobSet gives each pod. No operator writes ``TF_CONFIG`` for Trainer v2, so
every replica builds its own, in the worker entry point, before TensorFlow starts.

The suite's runtime (manifests/trainer) runs all tasks of the cluster shape as the pods of one
Indexed Job, the trainer's replicated job, because Trainer v2 sizes that one job only
(``numNodes``). The completion index says which task a pod is, in the shape's launch order:
chief, then workers, then parameter servers (worker 0 leads when there is no chief). Pod
``i`` is reached at ``<jobset>-<replicatedJob>-<jobIndex>-<i>.<subdomain>``: JobSet gives
Indexed Job pods that hostname, and a headless service named after the subdomain (by default
the JobSet's name, which Trainer makes the TrainJob's name)."""

import dataclasses
import json
import os
from typing import Dict, List, Mapping

from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.common.training.strategies import ClusterTask

PORT = 2222  # every replica serves TensorFlow's gRPC here (the runtime's containerPort)
# Set in each pod by the runtime from the JobSet's labels (downward API), and by the Job
# controller (JOB_COMPLETION_INDEX).
ENV_JOBSET = "TFKFP_JOBSET_NAME"
ENV_REPLICATED_JOB = "TFKFP_REPLICATED_JOB"
ENV_JOB_INDEX = "TFKFP_JOB_INDEX"
ENV_SUBDOMAIN = "TFKFP_SUBDOMAIN"  # optional: the JobSet's network.subdomain when set
ENV_PORT = "TFKFP_PORT"  # optional
ENV_INDEX = "JOB_COMPLETION_INDEX"
LABELS = {ENV_JOBSET: "jobset.sigs.k8s.io/jobset-name",
          ENV_REPLICATED_JOB: "jobset.sigs.k8s.io/replicatedjob-name",
          ENV_JOB_INDEX: "jobset.sigs.k8s.io/job-index"}


@dataclasses.dataclass(frozen=True)
class Identity:
    """One pod of the JobSet: its replicated job, job index and completion index."""

    jobset: str
    replicated_job: str
    job_index: int
    index: int
    subdomain: str = ""
    port: int = PORT

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Identity | None":
        """This pod's identity, or None outside a JobSet; a clear error when half there."""
        present = [name for name in (*LABELS, ENV_INDEX) if env.get(name, "") != ""]
        if not present:
            return None
        missing = [name for name in (*LABELS, ENV_INDEX) if name not in present]
        if missing:
            raise RuntimeError(
                f"this replica has {', '.join(present)} but not {', '.join(missing)}: the "
                "TrainJob's runtime must set them (see manifests/trainer), so the replica can "
                "work out its TF_CONFIG")
        return cls(env[ENV_JOBSET], env[ENV_REPLICATED_JOB], _int(env, ENV_JOB_INDEX),
                   _int(env, ENV_INDEX), env.get(ENV_SUBDOMAIN) or "",
                   _int(env, ENV_PORT) if env.get(ENV_PORT) else PORT)

    def host(self, index: int) -> str:
        """``host:port`` of the pod with this completion index."""
        subdomain = self.subdomain or self.jobset
        return (f"{self.jobset}-{self.replicated_job}-{self.job_index}-{index}.{subdomain}"
                f":{self.port}")


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        value = int(env[name])
    except ValueError:
        raise RuntimeError(f"{name}={env[name]!r} is not a whole number") from None
    if value < 0:
        raise RuntimeError(f"{name}={value} is negative")
    return value


def tasks(shape: ClusterShape) -> List[ClusterTask]:
    """The shape's tasks in completion-index order."""
    return [ClusterTask(role, i) for role, n in shape.replicas.items() for i in range(n)]


def task_at(shape: ClusterShape, index: int) -> ClusterTask:
    """The task the pod with this completion index runs."""
    order = tasks(shape)
    if not 0 <= index < len(order):
        raise RuntimeError(
            f"completion index {index} is outside the cluster shape of {len(order)} replicas "
            f"({_describe(shape)}): the TrainJob's numNodes and the training config disagree")
    return order[index]


def cluster_spec(shape: ClusterShape, identity: Identity) -> Dict[str, List[str]]:
    """Every task's address, by role, as ``TF_CONFIG``'s ``cluster``."""
    spec: Dict[str, List[str]] = {}
    for index, task in enumerate(tasks(shape)):
        spec.setdefault(task.type, []).append(identity.host(index))
    return spec


def tf_config(shape: ClusterShape, identity: Identity) -> str:
    """The ``TF_CONFIG`` of the replica with this identity."""
    task = task_at(shape, identity.index)
    return json.dumps({"cluster": cluster_spec(shape, identity),
                       "task": {"type": task.type, "index": task.index}})


def set_tf_config(shape: ClusterShape, env=None) -> bool:
    """Inside a JobSet with no ``TF_CONFIG``, build this replica's and set it; say whether."""
    env = os.environ if env is None else env
    if env.get("TF_CONFIG"):
        return False
    identity = Identity.from_env(env)
    if identity is None:
        return False
    env["TF_CONFIG"] = tf_config(shape, identity)
    return True


def _describe(shape: ClusterShape) -> str:
    return ", ".join(f"{n} {role}" for role, n in shape.replicas.items())
