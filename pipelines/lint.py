"""``tfkfp check``: a compiled pipeline against the cluster it will run on, before it is
uploaded.

The cluster is an overlay of manifests/ rendered to YAML (pipelines/overlays.py): its
``tfkfp-config`` allow-list (the images the steps and the training replicas run, the replicas'
service accounts; components/train/launchers/kube.py reads it on the cluster), its LimitRange
(each step container's requests and limits after the defaults it fills in: ``min``,
``max``, ``maxLimitRequestRatio``) and its ResourceQuota (each step's pod within ``hard``). The
pipeline's parameter defaults, and values given with ``--set``, go through the checks ``tfkfp
submit`` applies (registry.check_values). Each problem is one Problem naming the file, the
step or parameter, the value and the limit. Nothing here imports NumPy or TensorFlow.
"""

import dataclasses
from decimal import Decimal
from typing import Any, Dict, List, Sequence, Tuple

import yaml

from tfkfp.pipelines import registry
from tfkfp.pipelines.overlays import ACCOUNTS, ALLOWLIST, IMAGES, Cluster

# The compiled executor's resource fields (pipelines/resources.py writes them), by resource.
KFP_RESOURCES = {"cpu": ("resourceCpuRequest", "resourceCpuLimit"),
                 "memory": ("resourceMemoryRequest", "resourceMemoryLimit")}
# What a quota may name without a requests. prefix (it then means the requests).
COMPUTE = ("cpu", "memory", "ephemeral-storage")
# A compiled parameter's type, as the value a pipeline function takes.
PARAMETER_TYPES = {"NUMBER_INTEGER": int, "NUMBER_DOUBLE": float, "BOOLEAN": bool,
                   "STRING": str, "LIST": list, "STRUCT": dict}


@dataclasses.dataclass(frozen=True)
class Problem:
    file: str
    where: str  # "step train", "parameters"
    text: str

    def line(self) -> str:
        return f"{self.file}: {self.where}: {self.text}"


@dataclasses.dataclass(frozen=True)
class Container:
    """One step's main container as the API server sees it: requests and limits by
    resource, after the LimitRange's defaults."""

    requests: Dict[str, str]
    limits: Dict[str, str]


def check_files(paths: Sequence[str], cluster: Cluster | None, sets: Sequence[str] = (),
                mounted: Sequence[str] = ()) -> List[Problem]:
    """Every problem of each compiled pipeline (check_file). A ``--set`` value goes to each
    pipeline that takes the parameter; one that no pipeline takes is a problem."""
    problems = [p for path in paths for p in check_file(path, cluster, sets, mounted)]
    taken = {name for path in paths for name in compiled_parameters(load_spec(path))}
    for pair in sets:
        key, sep, _ = pair.partition("=")
        if not sep or key not in taken:
            problems.append(Problem("--set", pair, "no pipeline given takes this parameter; "
                                    f"they take {', '.join(sorted(taken)) or 'none'}"
                                    if sep else "expected NAME=VALUE"))
    return problems


def check_file(path: str, cluster: Cluster | None, sets: Sequence[str] = (),
               mounted: Sequence[str] = ()) -> List[Problem]:
    """Every problem of the compiled pipeline at ``path`` on ``cluster`` (None: parameters
    only); ``sets`` are ``NAME=VALUE`` values the run will give."""
    spec = load_spec(path)
    if "deploymentSpec" not in spec:
        return [Problem(path, "file", "not a compiled pipeline (no deploymentSpec); give "
                        "the YAML `tfkfp compile` writes")]
    problems = []
    if cluster is not None:
        tasks = task_names(spec)
        for label, container in executors(spec):
            where = f"step {', '.join(tasks.get(label, [label]))}"
            problems += [Problem(path, where, t) for t in _image_problems(container, cluster)]
            sized = admitted(container.get("resources", {}), cluster)
            problems += [Problem(path, where, t) for t in _limit_problems(sized, cluster)]
            problems += [Problem(path, where, t) for t in _quota_problems(sized, cluster)]
    problems += [Problem(path, "parameters", t)
                 for t in _parameter_problems(spec, cluster, sets, mounted)]
    return problems


def load_spec(path: str) -> Dict[str, Any]:
    """The pipeline spec of a compiled YAML (its first document); {} for anything else."""
    with open(path) as f:
        try:
            return next((d for d in yaml.safe_load_all(f) if isinstance(d, dict)), None) or {}
        except yaml.YAMLError as err:
            raise ValueError(f"{path} is not YAML: {' '.join(str(err).split())}") from err


def executors(spec: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """(label, container) of every executor that runs a container (not importers)."""
    found = spec.get("deploymentSpec", {}).get("executors", {})
    return [(label, e["container"]) for label, e in sorted(found.items()) if "container" in e]


def task_names(spec: Dict[str, Any]) -> Dict[str, List[str]]:
    """Executor label -> the names of the tasks that run it, in any DAG of the pipeline."""
    components = spec.get("components", {})
    dags = [spec.get("root", {})] + list(components.values())
    found: Dict[str, List[str]] = {}
    for dag in dags:
        for name, task in dag.get("dag", {}).get("tasks", {}).items():
            label = components.get(task.get("componentRef", {}).get("name"), {}).get(
                "executorLabel")
            if label:
                found.setdefault(label, []).append(task.get("taskInfo", {}).get("name", name))
    return {label: sorted(set(names)) for label, names in found.items()}


def _image_problems(container: Dict[str, Any], cluster: Cluster) -> List[str]:
    image = container.get("image", "")
    if cluster.images is None or image in cluster.images:
        return []
    return [f"image {image!r} is not in the allow-list of {cluster.source} (ConfigMap "
            f"{ALLOWLIST}, key {IMAGES}: {', '.join(cluster.images) or 'none'}); list it "
            "there, or compile with --image set to one that is"]


def admitted(resources: Dict[str, Any], cluster: Cluster) -> Container:
    """The step container's requests and limits once the API server has defaulted them: a
    request defaults to its limit, then the LimitRange fills a missing limit with its
    ``default`` and a missing request with its ``defaultRequest`` (else the limit)."""
    requests, limits = {}, {}
    for resource, (request_key, limit_key) in KFP_RESOURCES.items():
        if resources.get(request_key):
            requests[resource] = str(resources[request_key])
        if resources.get(limit_key):
            limits[resource] = str(resources[limit_key])
    accelerator = resources.get("accelerator") or {}
    if accelerator.get("resourceType") and accelerator.get("resourceCount"):
        gpus = str(accelerator["resourceCount"])
        requests[accelerator["resourceType"]] = limits[accelerator["resourceType"]] = gpus
    for resource, value in limits.items():
        requests.setdefault(resource, value)
    for item in (i for i in cluster.limits if i.get("type") == "Container"):
        for resource, value in (item.get("default") or {}).items():
            limits.setdefault(resource, str(value))
        for resource, value in (item.get("defaultRequest") or {}).items():
            requests.setdefault(resource, str(value))
    for resource, value in limits.items():
        requests.setdefault(resource, value)
    return Container(requests, limits)


def _limit_problems(container: Container, cluster: Cluster) -> List[str]:
    """What the LimitRanger admission plugin refuses (a Pod entry is checked against the
    step's container alone: a floor of what the whole pod holds)."""
    problems = []
    for item in cluster.limits:
        kind = item.get("type")
        for resource, floor in (item.get("min") or {}).items():
            request = container.requests.get(resource)
            if request is None or _less(request, floor):
                problems.append(f"{resource} request {request or 'none'} is below the "
                                f"LimitRange's {kind} min {floor}")
        for resource, ceiling in (item.get("max") or {}).items():
            limit = container.limits.get(resource)
            if limit is None or _less(ceiling, limit):
                problems.append(f"{resource} limit {limit or 'none'} is above the "
                                f"LimitRange's {kind} max {ceiling}")
        for resource, ratio in (item.get("maxLimitRequestRatio") or {}).items():
            limit, request = container.limits.get(resource), container.requests.get(resource)
            if limit and request and _value(limit) > _value(request) * _value(ratio):
                problems.append(f"{resource} limit {limit} is more than {ratio} times its "
                                f"request {request} (the LimitRange's maxLimitRequestRatio)")
    for resource, request in container.requests.items():
        limit = container.limits.get(resource)
        if limit and _less(limit, request):
            problems.append(f"{resource} request {request} is above its limit {limit} (the "
                            "LimitRange's default limit, as the step sets none)")
    return problems


def _quota_problems(container: Container, cluster: Cluster) -> List[str]:
    """A step's pod that alone exceeds a ResourceQuota, or lacks a limit the quota needs."""
    problems = []
    for name, hard in cluster.quotas:
        for key, ceiling in hard.items():
            scope, resource = _quota_key(key)
            if not resource:
                continue  # pods, object counts
            value = (container.requests if scope == "requests" else container.limits).get(
                resource)
            if value is None and scope == "limits":
                problems.append(f"sets no {resource} limit, which ResourceQuota {name} "
                                f"({key}) needs of every container")
            elif value is not None and _less(ceiling, value):
                problems.append(f"{resource} {scope[:-1]} {value} is above ResourceQuota "
                                f"{name}'s {key} {ceiling}")
    return problems


def _quota_key(key: str) -> Tuple[str, str]:
    """A quota's key as (requests or limits, resource); resource empty for counts."""
    if key.startswith(("requests.", "limits.")):
        scope, resource = key.split(".", 1)
        return scope, resource
    return ("requests", key) if key in COMPUTE else ("", "")


def _parameter_problems(spec: Dict[str, Any], cluster: Cluster | None, sets: Sequence[str],
                        mounted: Sequence[str]) -> List[str]:
    """The parameters' defaults and ``sets`` through ``tfkfp submit``'s checks, and train's
    replica image and service account against the allow-list."""
    pipeline_name = spec.get("pipelineInfo", {}).get("name", "")
    name = registry.by_compiled_name(pipeline_name)
    if name is None:
        return [f"pipeline {pipeline_name!r} is not one of this suite's "
                f"({', '.join(registry.names())}), so its parameters are not checked"] \
            if sets else []
    taken = compiled_parameters(spec)
    try:
        values = {**compiled_defaults(spec), **registry.parse_pairs(
            name, [pair for pair in sets if pair.partition("=")[0] in taken])}
        registry.check_values(name, values, "cluster", mounted)
    except registry.ParameterError as err:
        return [str(err)]
    return _replica_problems(values.get("launcher_options") or {}, cluster)


def compiled_parameters(spec: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The pipeline's parameters as compiled: name -> type, default, description."""
    return spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})


def compiled_defaults(spec: Dict[str, Any]) -> Dict[str, Any]:
    """The default of each root parameter that has one, as the pipeline function's type
    (the YAML keeps integers as floats)."""
    return {name: PARAMETER_TYPES.get(p.get("parameterType"), lambda v: v)(p["defaultValue"])
            for name, p in compiled_parameters(spec).items() if "defaultValue" in p}


def _replica_problems(options: Dict[str, Any], cluster: Cluster | None) -> List[str]:
    problems = []
    for field, allowed, key in (("image", cluster and cluster.images, IMAGES),
                                ("service_account", cluster and cluster.accounts, ACCOUNTS)):
        value = options.get(field)
        if value and allowed is not None and value not in allowed:
            problems.append(f"launcher_options {field} {value!r} is not in the allow-list "
                            f"of {cluster.source} (ConfigMap {ALLOWLIST}, key {key}: "
                            f"{', '.join(allowed) or 'none'})")
    return problems


def _value(quantity: Any) -> Decimal:
    from kubernetes.utils.quantity import parse_quantity

    return parse_quantity(str(quantity))


def _less(a: Any, b: Any) -> bool:
    return _value(a) < _value(b)
