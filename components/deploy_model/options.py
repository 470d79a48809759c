"""``deploy_options`` of deploy_model, by target, checked before anything is created."""

import dataclasses
import re
from typing import Any, Dict, List

from tfkfp.components._image import step_image
from tfkfp.components.deploy_model.errors import DeployConfigError, GateInputError

TARGETS = ("kserve", "vertex", "existing")
RUNTIMES = ("tfkfp", "tfserving")  # kserve: `tfkfp serve` in the suite's image, or TF Serving
# KServe's deployment modes as 0.16+ names them: standard (a Deployment with an HPA, no
# Knative) or knative. The names of older releases are still accepted and mean the same.
MODES = ("standard", "knative")
OLD_MODE_NAMES = {"raw": "standard", "serverless": "knative"}
SCALE_METRICS = {"standard": ("cpu",), "knative": ("concurrency", "rps")}
# Where the calls to a predictor come from besides its own namespace: the ingress gateway's
# namespace (Istio's, KServe's documented default) in both modes.
DEFAULT_INGRESS_NAMESPACES = "istio-system"
# An ingress_namespaces entry is a namespace name: a DNS label.
NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
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
    traffic_percent: int = 100  # knative kserve (canary of an update), vertex
    min_replicas: int = 1  # kserve, vertex
    max_replicas: int = 3  # kserve, vertex
    cpu: str = "2"  # kserve: request and limit per replica (threads follow the limit)
    memory: str = "4Gi"  # kserve: request and limit per replica
    namespace: str = ""  # kserve: default this pod's namespace, else tfkfp
    runtime: str = "tfkfp"  # kserve: tfkfp (SavedModel or TFLite) or tfserving (SavedModel)
    mode: str = "standard"  # kserve: standard (Deployment + HPA) or knative; raw, serverless
    scale_metric: str = ""  # kserve: concurrency or rps (knative), cpu (standard); "": default
    scale_target: int = 0  # kserve: per replica (requests, or CPU %); 0: the engine's default
    service_account: str = "tfkfp-serving"  # kserve: the predictor's (no API rights)
    ingress_namespaces: str = DEFAULT_INGRESS_NAMESPACES  # kserve: who may call, comma-separated
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


# The deploy gate's metrics (gate.py measures them): metric -> True when higher is better.
GATE_METRICS = {"accuracy": True, "log_loss": False, "rmse": False, "mae": False}


def check_gate(metric: str, margin: float) -> None:
    """The gate's settings, checked before a run (gate.py imports NumPy; this module does
    not)."""
    if metric not in GATE_METRICS:
        raise GateInputError(f"gate metric {metric!r} is not one of {', '.join(GATE_METRICS)}")
    if margin < 0:
        raise GateInputError(f"gate margin {margin} is negative: it is how much worse than "
                             "the serving model the candidate may be")


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
                                      "tfserving_version", "ingress_namespaces")},
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
    parsed = dataclasses.replace(parsed, mode=OLD_MODE_NAMES.get(parsed.mode, parsed.mode))
    _check_numbers(parsed)
    _check_choices(target, parsed)
    if target == "kserve":
        _check_kserve(parsed)
    return parsed


def ingress_namespaces(options: DeployOptions) -> List[str]:
    """The namespaces of ``ingress_namespaces``, in order, without blanks."""
    return [name.strip() for name in options.ingress_namespaces.split(",") if name.strip()]


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
    choices = {"runtime": (RUNTIMES, ""),
               "mode": (MODES, f" (or KServe's older names {', '.join(OLD_MODE_NAMES)})")}
    for name, (allowed, more) in choices.items():
        if getattr(parsed, name) not in allowed:
            raise DeployConfigError(f"deploy_options {name} {getattr(parsed, name)!r} is "
                                    f"not one of {', '.join(allowed)}{more}")
    metrics = SCALE_METRICS[parsed.mode]
    if parsed.scale_metric and parsed.scale_metric not in metrics:
        raise DeployConfigError(f"deploy_options scale_metric {parsed.scale_metric!r} does "
                                f"not apply in mode {parsed.mode!r}; allowed: "
                                f"{', '.join(metrics)}")
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


def _check_kserve(parsed: DeployOptions) -> None:
    """What the chosen KServe mode can do, and the predictor's callers' namespaces."""
    if parsed.mode == "standard" and parsed.traffic_percent != 100:
        raise DeployConfigError(
            f"deploy_options traffic_percent {parsed.traffic_percent} needs mode 'knative': "
            "in standard mode an update replaces the predictor in one rollout, with no "
            "canary split")
    if parsed.mode == "standard" and parsed.min_replicas == 0:
        raise DeployConfigError(
            "deploy_options min_replicas 0 (scale to zero) needs mode 'knative': standard "
            "mode's HorizontalPodAutoscaler keeps at least one replica; set min_replicas to "
            "1 or more, or mode 'knative'")
    bad = [name for name in ingress_namespaces(parsed)
           if len(name) > 63 or not NAMESPACE_NAME.fullmatch(name)]
    if bad:
        raise DeployConfigError(
            f"deploy_options ingress_namespaces {parsed.ingress_namespaces!r}: {bad} are not "
            "namespace names (comma-separated; lower-case letters, digits and '-', at most 63)")


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
