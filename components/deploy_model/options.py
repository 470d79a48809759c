"""``deploy_options`` of deploy_model, by target, checked before anything is created."""

import dataclasses
import re
from typing import Any, Dict

from tfkfp.components._image import step_image
from tfkfp.components.deploy_model.errors import DeployConfigError

TARGETS = ("kserve", "vertex", "existing")
RUNTIMES = ("tfkfp", "tfserving")  # kserve: `tfkfp serve` in the suite's image, or TF Serving
MODES = ("serverless", "raw")  # KServe deployment modes: Knative, or Deployment + HPA
SCALE_METRICS = {"serverless": ("concurrency", "rps"), "raw": ("cpu",)}
# An InferenceService name is a DNS label, and Knative adds "-predictor-00001-deployment-..."
SERVICE_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_SERVICE_NAME = 45
# TF Serving's tags for KServe's runtimeVersion: KServe's stock runtime pins a TF Serving that
# predates TF 2.21's SavedModels; this one loads them.
DEFAULT_TFSERVING_VERSION = "2.19.0"


@dataclasses.dataclass(frozen=True)
class DeployOptions:
    """Each field's comment says which targets read it."""

    image: str = dataclasses.field(default_factory=step_image)  # kserve tfkfp, vertex
    deadline_seconds: int = 900  # kserve, vertex: not ready by then fails the step
    poll_seconds: float = 5.0  # kserve, vertex: how often the status is read
    traffic_percent: int = 100  # serverless kserve (canary of an update), vertex
    min_replicas: int = 1  # kserve, vertex
    max_replicas: int = 3  # kserve, vertex
    cpu: str = "2"  # kserve: request and limit per replica (threads follow the limit)
    memory: str = "4Gi"  # kserve: request and limit per replica
    namespace: str = ""  # kserve: default this pod's namespace, else tfkfp
    runtime: str = "tfkfp"  # kserve: tfkfp (SavedModel or TFLite) or tfserving (SavedModel)
    mode: str = "serverless"  # kserve: serverless (Knative) or raw (Deployment + HPA)
    scale_metric: str = ""  # kserve: concurrency or rps (serverless), cpu (raw); "": default
    scale_target: int = 0  # kserve: per replica (requests, or CPU %); 0: the engine's default
    service_account: str = "tfkfp-serving"  # kserve: the predictor's (no API rights)
    storage_uri: str = ""  # kserve, vertex: where the model is published (default: its URI)
    tfserving_version: str = DEFAULT_TFSERVING_VERSION  # kserve tfserving: runtimeVersion
    serve_args: str = ""  # kserve tfkfp, vertex: more `tfkfp serve` flags, space-separated
    precomputed_uri: str = ""  # kserve tfkfp, vertex: batch_predict output the server loads
    precomputed_key: str = ""  # with precomputed_uri: its key column
    project: str = ""  # vertex: Google Cloud project (default: the environment's)
    region: str = "us-central1"  # vertex
    machine_type: str = "n1-standard-4"  # vertex
    endpoint: str = ""  # vertex: an existing endpoint's ID or name (default: a new one)
    url: str = ""  # existing: the endpoint's base URL, e.g. http://127.0.0.1:8080


READ_BY = {
    "image": ("kserve", "vertex"), "deadline_seconds": ("kserve", "vertex", "existing"),
    "poll_seconds": ("kserve", "vertex", "existing"),
    **{name: ("kserve", "vertex") for name in ("traffic_percent", "min_replicas",
                                               "max_replicas", "storage_uri", "serve_args")},
    # existing: the running server was started with them; publishing makes it reload
    **{name: ("kserve", "vertex", "existing") for name in ("precomputed_uri",
                                                           "precomputed_key")},
    **{name: ("kserve",) for name in ("cpu", "memory", "namespace", "runtime", "mode",
                                      "scale_metric", "scale_target", "service_account",
                                      "tfserving_version")},
    **{name: ("vertex",) for name in ("project", "region", "machine_type", "endpoint")},
    "url": ("existing",),
}


def check_name(name: str) -> None:
    if not (SERVICE_NAME.fullmatch(name) and len(name) <= MAX_SERVICE_NAME):
        raise DeployConfigError(
            f"service name {name!r} must be at most {MAX_SERVICE_NAME} lower-case letters, "
            "digits and '-', starting with a letter and ending with a letter or digit (the "
            "engine derives host and pod names from it)")


def parse_options(target: str, options: Dict[str, Any] | None) -> DeployOptions:
    """Check ``deploy_options`` for this target: known keys, right types, sane values."""
    if target not in TARGETS:
        raise DeployConfigError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    options = dict(options or {})
    allowed = sorted(name for name, targets in READ_BY.items() if target in targets)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise DeployConfigError(f"deploy_options {unknown} are not known to target "
                                f"{target!r}; allowed: {', '.join(allowed)}")
    defaults = DeployOptions()
    parsed = dataclasses.replace(defaults, **{
        name: _typed(name, value, type(getattr(defaults, name)))
        for name, value in options.items()})
    _check_numbers(parsed)
    _check_choices(target, parsed)
    return parsed


def _check_numbers(parsed: DeployOptions) -> None:
    for name in ("deadline_seconds", "poll_seconds"):
        if getattr(parsed, name) <= 0:
            raise DeployConfigError(f"deploy_options {name} must be positive, got "
                                    f"{getattr(parsed, name)}")
    if not 0 < parsed.traffic_percent <= 100:
        raise DeployConfigError(f"deploy_options traffic_percent {parsed.traffic_percent} "
                                "is not in 1-100")
    if not 0 <= parsed.min_replicas <= parsed.max_replicas or parsed.max_replicas < 1:
        raise DeployConfigError(
            f"deploy_options min_replicas {parsed.min_replicas} and max_replicas "
            f"{parsed.max_replicas}: expected 0 <= min_replicas <= max_replicas, max >= 1")
    if parsed.scale_target < 0:
        raise DeployConfigError(f"deploy_options scale_target {parsed.scale_target} is "
                                "negative")


def _check_choices(target: str, parsed: DeployOptions) -> None:
    for name, allowed in (("runtime", RUNTIMES), ("mode", MODES)):
        if getattr(parsed, name) not in allowed:
            raise DeployConfigError(f"deploy_options {name} {getattr(parsed, name)!r} is "
                                    f"not one of {', '.join(allowed)}")
    metrics = SCALE_METRICS[parsed.mode]
    if parsed.scale_metric and parsed.scale_metric not in metrics:
        raise DeployConfigError(f"deploy_options scale_metric {parsed.scale_metric!r} does "
                                f"not apply in mode {parsed.mode!r}; allowed: "
                                f"{', '.join(metrics)}")
    if target == "kserve" and parsed.mode == "raw" and parsed.traffic_percent != 100:
        raise DeployConfigError(
            "deploy_options traffic_percent needs mode 'serverless': KServe's RawDeployment "
            "mode replaces the predictor in one rollout and has no canary split")
    if target == "kserve" and parsed.runtime == "tfserving" and (
            parsed.serve_args or parsed.precomputed_uri):
        raise DeployConfigError("deploy_options serve_args and precomputed_uri are flags of "
                                "`tfkfp serve` (runtime 'tfkfp'); TF Serving takes neither")
    if bool(parsed.precomputed_uri) != bool(parsed.precomputed_key):
        raise DeployConfigError("deploy_options precomputed_uri and precomputed_key go "
                                "together: the predictions folder and its key column")
    if target == "existing" and not parsed.url.startswith(("http://", "https://")):
        raise DeployConfigError(f"target 'existing' needs deploy_options url, the endpoint's "
                                f"base URL (http:// or https://); got {parsed.url!r}")


def _typed(name: str, value: Any, kind: type) -> Any:
    """KFP passes a dict parameter through JSON, so numbers may arrive as floats."""
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DeployConfigError(f"deploy_options {name} must be {kind.__name__}, got "
                                f"{value!r}")
    return value
