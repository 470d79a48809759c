"""A cluster job as the launchers read it: train's ``launcher_options`` (LaunchOptions), the
job plan (JobPlan: where the replicas read and write) and the command every replica runs.
job.py checks the options and makes the plan against the table in launchers/__init__.py; the
launchers' own modules, which that table imports, need only these."""

import dataclasses
import re
from typing import Dict

from tfkfp.components._image import step_image
from tfkfp.components.common.training.config import TrainConfig

# A job's name is a DNS label, and so are its pods' host names (<name>-worker-255,
# <name>-node-0-319), which must fit in 63 characters.
JOB_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_JOB_NAME = 52


@dataclasses.dataclass(frozen=True)
class LaunchOptions:
    """``launcher_options`` of train. Which launchers read a field is said by ``options`` of
    their entries in LAUNCHERS (launchers/__init__.py); the comments say what each field
    means to them (all: every cluster launcher; k8s: the Kubernetes ones)."""

    job_dir: str = ""  # all: shared folder for the job (default: beside the model)
    # all: the replicas' image; default the step's own (k8s: from the tfkfp-config allow-list)
    image: str = dataclasses.field(default_factory=step_image)
    deadline_seconds: int = 86400  # all: the job fails when it runs longer
    poll_seconds: float = 10.0  # all: how often the job's status is read
    # k8s: default tfkfp-replica, from the tfkfp-config allow-list; vertex: the project's
    service_account: str = ""
    namespace: str = ""  # k8s: default this pod's namespace, else tfkfp
    job_name: str = ""  # k8s: default tfkfp-train-<random>
    cpu: str = "2"  # k8s: CPU request per replica
    memory: str = "8Gi"  # k8s: memory request and limit per replica
    gpus: int = 0  # all: GPUs per replica (k8s: nvidia.com/gpu; tfjob, vertex: not the ps)
    volume_claim: str = ""  # k8s: a ReadWriteMany PVC mounted in every replica
    mount_path: str = "/mnt/tfkfp"  # k8s: where volume_claim is mounted
    backoff_limit: int = 3  # tfjob: restarts (of preempted replicas) before the job fails
    runtime: str = "tfkfp-tensorflow"  # trainjob: the ClusterTrainingRuntime (manifests/trainer)
    project: str = ""  # vertex: Google Cloud project (default: the environment's)
    region: str = "us-central1"  # vertex
    machine_type: str = "n1-standard-8"  # vertex
    gpu_type: str = ""  # vertex: the accelerator, e.g. NVIDIA_TESLA_T4 (with gpus)


@dataclasses.dataclass(frozen=True)
class JobPlan:
    """The run as the replicas see it, and what to copy back for the caller."""

    config: TrainConfig  # paths every replica reaches
    job_dir: str
    config_uri: str
    result_uri: str
    copy_in: Dict[str, str]  # caller's path -> shared path, before launch
    copy_out: Dict[str, str]  # shared path -> caller's path, after success


def worker_command(job: JobPlan) -> list:
    """The command every replica runs (its role comes from TF_CONFIG)."""
    return ["python", "-m", "tfkfp.components.train.worker", job.config_uri, job.result_uri]
