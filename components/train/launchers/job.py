"""What the cluster launchers (the entries of LAUNCHERS that run elsewhere) share: their
options, checked before launch as each entry says, and the job plan: where the replicas read
the data and write the model, checkpoints, TensorBoard logs and the result. A replica runs
on another machine, so every one of those places is on storage all replicas reach (an object
store such as gs://, or a shared volume mounted at the same path); what is not gets staged in
the job folder and copied back afterwards. LaunchOptions, JobPlan and worker_command live in
spec.py (the launchers' modules need them without the table); they are importable here too."""

import dataclasses
import json
import logging
from typing import Any, Dict

from tfkfp.components.common.platform import kfp_mounts, uris
from tfkfp.components.common.platform.choices import typed_option
from tfkfp.components.common.training.config import (
    CONFIG_FILE,
    RESULT_FILE,
    TrainConfig,
    TrainConfigError,
)
from tfkfp.components.train import launchers
from tfkfp.components.train.launchers.spec import (  # noqa: F401 - importable here
    JOB_NAME,
    MAX_JOB_NAME,
    JobPlan,
    LaunchOptions,
    worker_command,
)

log = logging.getLogger("tfkfp")


def parse_options(launcher: str, options: Dict[str, Any] | None) -> LaunchOptions:
    """Check ``launcher_options`` for this launcher, as its entry in LAUNCHERS says: known
    keys, right types, sane values, then the launcher's own checks."""
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


def _either(items) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, [", ".join(items[:-1]), items[-1]]))


def _stores(entry) -> list:
    """The object stores the launcher's replicas reach, as URI schemes: the entry's own
    (vertex: gs://), else every store KFP mounts (common.platform.kfp_mounts)."""
    return [entry.job_dir_scheme] if entry.job_dir_scheme else sorted(
        kfp_mounts.MOUNTS.values())


def _reachable(entry) -> str:
    """What a path every replica reaches may be, for the messages: a URI of such a store,
    the path KFP mounts one at in the step, or (the Kubernetes launchers) the shared
    volume."""
    schemes = _stores(entry)
    prefixes = [prefix for prefix, scheme in kfp_mounts.MOUNTS.items() if scheme in schemes]
    volume = (["a folder under launcher_options mount_path with volume_claim"]
              if "volume_claim" in entry.options else [])
    return _either([f"a {_either(schemes)} URI", f"a KFP path under {_either(prefixes)}",
                    *volume])


def plan(config: TrainConfig, launcher: str, options: LaunchOptions) -> JobPlan:
    """Map each path of the run to storage the replicas reach, staging what is not."""
    entry = launchers.get(launcher)

    def shared(path: str) -> str | None:
        if path and options.volume_claim and (
                path == options.mount_path or path.startswith(options.mount_path.rstrip("/")
                                                              + "/")):
            return path
        return uris.kfp_remote_uri(path) if path else None

    model_uri = shared(config.model_dir)
    job_dir = options.job_dir or (f"{model_uri.rstrip('/')}-job" if model_uri else "")
    where = _reachable(entry)
    if options.job_dir and not shared(options.job_dir):
        raise TrainConfigError(
            f"launcher_options job_dir {options.job_dir!r} is not on storage every "
            f"{launcher} replica reaches; use {where}")
    if not job_dir:
        raise TrainConfigError(
            f"launcher {launcher!r} runs replicas on other machines, so they need a job_dir "
            f"they can all reach ({where}); the model path {config.model_dir!r} is on this "
            f"machine's disk only. Use a pipeline root on {_either(_stores(entry))}, or set "
            "launcher_options job_dir")
    if entry.job_dir_scheme and not job_dir.startswith(entry.job_dir_scheme):
        raise TrainConfigError(f"launcher {launcher!r} needs a {entry.job_dir_scheme} "
                               f"job_dir, got {job_dir!r}")
    if config.checkpoint_dir and not shared(config.checkpoint_dir):
        raise TrainConfigError(
            f"checkpoint_dir {config.checkpoint_dir!r} is on this machine's disk, which the "
            f"{launcher} replicas cannot reach; use {where}, or leave it empty "
            "(checkpoints then go to the job_dir)")
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
                   uris.join(job_dir, CONFIG_FILE), uris.join(job_dir, RESULT_FILE),
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
