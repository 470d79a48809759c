"""``engine_options`` of the remote engines (katib, vertex): where the study and its trials
run, checked before anything is written or created. The local engine takes none."""

import dataclasses
import re
from typing import Any, Dict

from tfkfp.components._image import step_image
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.choices import typed_option
from tfkfp.components.tune.errors import TuneError

NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_NAME = 40  # Katib's webhook: an experiment name of at most 40 characters


@dataclasses.dataclass(frozen=True)
class KatibOptions:
    namespace: str = ""  # default this pod's namespace, else tfkfp
    image: str = dataclasses.field(default_factory=step_image)  # the trials' image
    service_account: str = ""  # the trials' account (default: the namespace's default)
    cpu: str = "2"  # CPU request per trial
    memory: str = "8Gi"  # memory request and limit per trial
    gpus: int = 0  # nvidia.com/gpu per trial
    volume_claim: str = ""  # a ReadWriteMany PVC mounted in every trial
    mount_path: str = "/mnt/tfkfp"  # where volume_claim is mounted
    trials_dir: str = ""  # shared folder of the trials (default: beside the output model)
    runtime: str = "tfkfp-tensorflow"  # multi-worker trials: the ClusterTrainingRuntime
    experiment_name: str = ""  # default tfkfp-tune-<random>
    poll_seconds: float = 10.0  # how often the experiment's status is read
    deadline_seconds: int = 7 * 86400  # the experiment is deleted when it runs longer


@dataclasses.dataclass(frozen=True)
class VertexOptions:
    project: str = ""  # default: the credentials' project
    region: str = "us-central1"
    image: str = dataclasses.field(default_factory=step_image)  # the trials' image
    service_account: str = ""  # the trials' account (default: the project's)
    machine_type: str = "n1-standard-8"
    gpu_type: str = ""  # an accelerator, e.g. NVIDIA_TESLA_T4 (with gpus)
    gpus: int = 0
    trials_dir: str = ""  # gs:// folder of the trials (default: beside the output model)
    display_name: str = ""  # default tfkfp-tune-<random>
    poll_seconds: float = 30.0
    deadline_seconds: int = 7 * 86400  # the job is cancelled when it runs longer


OPTIONS = {"katib": KatibOptions, "vertex": VertexOptions}


def parse(engine: str, engine_options: Dict[str, Any] | None):
    """The engine's checked options (KatibOptions, VertexOptions); local takes none."""
    options = dict(engine_options or {})
    kind = OPTIONS.get(engine)
    if kind is None:
        if options:
            raise TuneError(f"engine_options {sorted(options)} are for engines "
                            f"{', '.join(OPTIONS)}; engine {engine!r} takes none")
        return None
    defaults = kind()
    known = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TuneError(f"engine_options {unknown} are not known to engine {engine!r}; "
                        f"allowed: {', '.join(known)}")
    values = {name: _typed(name, value, type(getattr(defaults, name)))
              for name, value in options.items()}
    parsed = dataclasses.replace(defaults, **values)
    for name in ("poll_seconds", "deadline_seconds"):
        if getattr(parsed, name) <= 0:
            raise TuneError(f"engine_options {name} must be positive, got "
                            f"{getattr(parsed, name)}")
    if parsed.gpus < 0:
        raise TuneError(f"engine_options gpus must not be negative, got {parsed.gpus}")
    if engine == "vertex":
        if bool(parsed.gpu_type) != bool(parsed.gpus):
            raise TuneError("engine_options gpu_type and gpus go together on vertex (e.g. "
                            "NVIDIA_TESLA_T4 and 1)")
        return parsed
    name = parsed.experiment_name
    if name and not (NAME.fullmatch(name) and len(name) <= MAX_NAME):
        raise TuneError(f"engine_options experiment_name {name!r} must be at most {MAX_NAME} "
                        "lower-case letters, digits and '-', starting with a letter and "
                        "ending with a letter or digit (Katib's rule)")
    return parsed


def _typed(name: str, value: Any, kind: type) -> Any:
    return typed_option("engine_options", name, value, kind, TuneError)


def shared(path: str, options) -> str | None:
    """``path`` as every trial reaches it: on the mounted claim (katib), or an object store
    URI (KFP's /gcs/, /s3/ and /minio/ paths included; vertex reads gs:// only); None when
    only this machine sees it."""
    mount = getattr(options, "mount_path", "").rstrip("/") + "/"
    if getattr(options, "volume_claim", "") and (path + "/").startswith(mount):
        return path
    uri = uris.kfp_remote_uri(path)
    return uri if uri and (isinstance(options, KatibOptions) or uri.startswith("gs://")) \
        else None


def trial_paths(dataset: str, model_dir: str, options) -> Dict[str, str]:
    """Where the trials read the Dataset and write their folders; refused when a trial
    could not reach them."""
    engine = "katib" if isinstance(options, KatibOptions) else "vertex"
    where = ("a gs://, s3:// or minio:// URI (or KFP's /gcs/, /s3/, /minio/ path), or a "
             "path under mount_path with volume_claim" if engine == "katib"
             else "a gs:// URI (or a /gcs/ path)")
    data = shared(dataset, options)
    if not data:
        raise TuneError(f"engine {engine!r}: the trials run on other machines and cannot "
                        f"read the Dataset at {dataset!r}; give a Dataset on {where}")
    if options.trials_dir:
        trials = shared(options.trials_dir, options)
        if not trials:
            raise TuneError(f"engine_options trials_dir {options.trials_dir!r} is not on "
                            f"storage every trial reaches; use {where}")
    else:
        model = shared(model_dir, options)
        if not model:
            raise TuneError(f"engine {engine!r} needs a trials_dir every trial reaches ({where});"
                            f" the model path {model_dir!r} is on this machine's disk only. "
                            "Use a gs:// pipeline root or set engine_options trials_dir")
        trials = model.rstrip("/") + "-trials"
    return {"dataset": data, "trials_dir": trials.rstrip("/")}
