"""What the cluster launchers (the entries of LAUNCHERS that run elsewhere) share: their
options, checked before launch as each entry says, and the job plan: where the replicas read
the data and write the model, checkpoints, TensorBoard logs and the result. A replica runs
on another machine, so every one of those places is on storage all replicas reach (an object
store such as gs://, or a shared volume mounted at the same path); what is not gets staged in
the job folder and copied back afterwards."""

import dataclasses
import json
import logging
import re
from typing import Any, Dict

from tfkfp.components._image import step_image
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.choices import typed_option
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError

log = logging.getLogger("tfkfp")

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


def parse_options(launcher: str, options: Dict[str, Any] | None) -> LaunchOptions:
    """Check ``launcher_options`` for this launcher, as its entry in LAUNCHERS says: known
    keys, right types, sane values, then the launcher's own checks."""
    from tfkfp.components.train import launchers  # the table imports this module

    entry = launchers.get(launcher)
    options = dict(options or {})
    if not entry.options:
        if options:
            takers = [name for name, other in launchers.LAUNCHERS.items() if other.options]
            raise TrainConfigError(f"launcher_options {sorted(options)} are for the cluster "
                                   f"launchers ({', '.join(takers)}); launcher {launcher!r} "
                                   "takes none")
        return LaunchOptions()
    allowed = sorted(entry.options)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TrainConfigError(f"launcher_options {unknown} are not known to launcher "
                               f"{launcher!r}; allowed: {', '.join(allowed)}")
    defaults = LaunchOptions()
    values = {}
    for name, value in options.items():
        kind = type(getattr(defaults, name))
        values[name] = _typed(name, value, kind)
    parsed = dataclasses.replace(defaults, **values)
    for name in ("deadline_seconds", "poll_seconds"):
        if getattr(parsed, name) <= 0:
            raise TrainConfigError(f"launcher_options {name} must be positive, got "
                                   f"{getattr(parsed, name)}")
    for name in ("gpus", "backoff_limit"):
        if getattr(parsed, name) < 0:
            raise TrainConfigError(f"launcher_options {name} must not be negative, got "
                                   f"{getattr(parsed, name)}")
    if parsed.volume_claim and not parsed.mount_path.startswith("/"):
        raise TrainConfigError(f"launcher_options mount_path {parsed.mount_path!r} must be "
                               "an absolute path")
    if parsed.job_name and not (JOB_NAME.fullmatch(parsed.job_name)
                                and len(parsed.job_name) <= MAX_JOB_NAME):
        raise TrainConfigError(
            f"launcher_options job_name {parsed.job_name!r} must be at most {MAX_JOB_NAME} "
            "lower-case letters, digits and '-', starting with a letter and ending with a "
            "letter or digit (its pods' host names derive from it)")
    entry.check(parsed)
    return parsed


def _typed(name: str, value: Any, kind: type) -> Any:
    return typed_option("launcher_options", name, value, kind, TrainConfigError)


@dataclasses.dataclass(frozen=True)
class JobPlan:
    """The run as the replicas see it, and what to copy back for the caller."""

    config: TrainConfig  # paths every replica reaches
    job_dir: str
    config_uri: str
    result_uri: str
    copy_in: Dict[str, str]  # caller's path -> shared path, before launch
    copy_out: Dict[str, str]  # shared path -> caller's path, after success


def plan(config: TrainConfig, launcher: str, options: LaunchOptions) -> JobPlan:
    """Map each path of the run to storage the replicas reach, staging what is not."""
    from tfkfp.components.train import launchers  # the table imports this module

    entry = launchers.get(launcher)

    def shared(path: str) -> str | None:
        if path and options.volume_claim and (
                path == options.mount_path or path.startswith(options.mount_path.rstrip("/")
                                                              + "/")):
            return path
        return uris.kfp_remote_uri(path) if path else None

    model_uri = shared(config.model_dir)
    job_dir = options.job_dir or (f"{model_uri.rstrip('/')}-job" if model_uri else "")
    where = f"{entry.job_dir_scheme or 'gs://'}..." + (
        ", or a folder under launcher_options mount_path with volume_claim"
        if "volume_claim" in entry.options else "")
    if options.job_dir and not shared(options.job_dir):
        raise TrainConfigError(
            f"launcher_options job_dir {options.job_dir!r} is not on storage every "
            f"{launcher} replica reaches; use {where}")
    if not job_dir:
        raise TrainConfigError(
            f"launcher {launcher!r} runs replicas on other machines, so they need a job_dir "
            f"they can all reach ({where}); the model path {config.model_dir!r} is on this "
            "machine's disk only. Use a gs:// pipeline root or set launcher_options job_dir")
    if entry.job_dir_scheme and not job_dir.startswith(entry.job_dir_scheme):
        raise TrainConfigError(f"launcher {launcher!r} needs a {entry.job_dir_scheme} "
                               f"job_dir, got {job_dir!r}")
    if config.checkpoint_dir and not shared(config.checkpoint_dir):
        raise TrainConfigError(
            f"checkpoint_dir {config.checkpoint_dir!r} is on this machine's disk, which the "
            f"{launcher} replicas cannot reach; use a gs:// URI or leave it empty (checkpoints "
            "then go to the job_dir)")
    copy_in, copy_out, paths = {}, {}, {}
    for field, staged, direction in (("dataset", "data", copy_in),
                                     ("warm_start", "warm_start", copy_in),
                                     ("model_dir", "model", copy_out),
                                     ("tensorboard_dir", "tensorboard", copy_out)):
        path = getattr(config, field)
        if not path or shared(path):
            paths[field] = shared(path) or ""
            continue
        paths[field] = uris.join(job_dir, staged)
        if direction is copy_in:
            copy_in[path] = paths[field]
        else:
            copy_out[paths[field]] = path
    paths["checkpoint_dir"] = (shared(config.checkpoint_dir) if config.checkpoint_dir
                               else uris.join(job_dir, "checkpoints"))
    return JobPlan(dataclasses.replace(config, **paths), job_dir,
                   uris.join(job_dir, "config.json"), uris.join(job_dir, "result.json"),
                   copy_in, copy_out)


def stage(job: JobPlan) -> None:
    """Before launch: copy inputs in, write the config, clear an old result."""
    uris.makedirs(job.job_dir)
    for src, dst in job.copy_in.items():
        log.info("staging %s in %s for the replicas", src, dst)
        uris.copy_tree(src, dst)
    uris.write_text_atomic(job.config_uri, job.config.to_json())
    if uris.exists(job.result_uri):
        uris.remove(job.result_uri)


def collect(job: JobPlan) -> Dict[str, Any]:
    """After success: the chief's result, and the outputs copied back to the caller."""
    if not uris.exists(job.result_uri):
        raise RuntimeError(f"the training job succeeded but its chief wrote no result at "
                           f"{job.result_uri}")
    for src, dst in job.copy_out.items():
        if uris.exists(src):
            uris.copy_tree(src, dst)
    return json.loads(uris.read_text(job.result_uri))


def worker_command(job: JobPlan) -> list:
    """The command every replica runs (its role comes from TF_CONFIG)."""
    return ["python", "-m", "tfkfp.components.train.worker", job.config_uri, job.result_uri]
