"""Refusing a pipeline request before a run starts, with the steps' own option checks.

Each pipeline's ``check_arguments`` (called by ``registry.parse_parameters``, so by ``tfkfp
run`` and ``tfkfp submit``) hands what it passes a step (``fed``: read from the compiled
pipeline, so no list of names is kept) to that component's own ``check_options``: the
allowed values (modes, formats, compressions, policies) live in the
components, once, in modules that import no NumPy or TensorFlow (a component's options.py,
train's core), so a typo is refused in about a second, on the light install too. Anything
that needs the data (a label column, a file's contents) is the task's to refuse.

What depends on where the run happens is checked here too (``check_local_run``,
``check_cluster_run``): a local path a step reads must exist on this machine for ``tfkfp
run``, a cluster run's pods cannot read this machine's paths, and a local run that deploys to
KServe or launches a Kubernetes job needs a cluster configuration. These are deterministic:
refused before the run rather than retried by a step (fingerprint_input's retries are for
remote storage's transient errors).
"""

import inspect
import os
import re
from typing import Any, Callable, Dict, List, Mapping, Sequence

from tfkfp.components.common.data import data_root
from tfkfp.components.common.platform import uris

# What the pipelines pass export_tflite in place of a quantization: freeze_quantize's chosen model.
QUANTIZED = "freeze_quantize's tflite_model"

# The pipelines' parameters that name data a step reads, and places a step writes.
READ_URIS = ("input_uri", "dataset_uri", "model_uri", "precompute_dataset_uri",
             "warm_start_model_uri", "serving_model_uri")
WRITE_URIS = ("checkpoint_dir", "precomputed_uri")
# A parameter that is a word or a place a step writes (data_root's "auto" and "inside").
PLACE_OR_WORD = {"data_root": ("", data_root.AUTO, data_root.INSIDE)}
# Parameter values whose step talks to the Kubernetes API (deploy_model, train's launchers).
KUBERNETES_VALUES = {"deploy": ("kserve",), "target": ("kserve",),
                     "launcher": ("tfjob", "trainjob")}


def with_defaults(pipeline, arguments: Mapping[str, Any]) -> Dict[str, Any]:
    """The pipeline's arguments, with its defaults for those not given."""
    inputs = pipeline.component_spec.inputs or {}
    return {**{name: spec.default for name, spec in inputs.items()}, **arguments}


def fed(pipeline, step, values: Mapping[str, Any]) -> Dict[str, Any]:
    """What ``pipeline`` gives ``step`` (every task of it, in any branch or loop), under the
    step's parameter names: the pipeline arguments in ``values`` it wires there and the
    constants it passes, read from the compiled pipeline, so a check is handed what the
    step gets without a list of names to keep in step. What another task computes (a
    loop item, an upstream output) is the run's, and left out."""
    from google.protobuf import json_format

    spec = json_format.MessageToDict(pipeline.pipeline_spec)
    component = re.compile(rf"comp-{re.escape(step.component_spec.name)}(-\d+)?")
    given: Dict[str, Any] = {}
    _walk(spec, spec["root"]["dag"], dict(values), component, given)
    return given


def _walk(spec, dag, scope: Dict[str, Any], component, given: Dict[str, Any]) -> None:
    """Visit ``dag``'s tasks; ``scope``: the values of the DAG's own inputs."""
    for task in dag.get("tasks", {}).values():
        name = task["componentRef"]["name"]
        known = {}
        for parameter, source in task.get("inputs", {}).get("parameters", {}).items():
            if "componentInputParameter" in source:
                if source["componentInputParameter"] in scope:
                    known[parameter] = scope[source["componentInputParameter"]]
            elif "constant" in source.get("runtimeValue", {}):
                known[parameter] = source["runtimeValue"]["constant"]
        inner = spec["components"][name].get("dag")
        if inner is not None:
            _walk(spec, inner, known, component, given)
        elif component.fullmatch(name):
            for parameter, value in known.items():
                given.setdefault(parameter, value)


def check_step(step, check: Callable, given: Mapping[str, Any]) -> Any:
    """Call a component's own ``check`` on what the pipeline gives ``step``: a function, or
    the step's options class (common.platform.step_options), which checks as it is built;
    what it returns (the options).

    ``given`` holds the step's arguments under the step's parameter names; the step's own
    defaults fill every other parameter ``check`` takes (an options setting the component
    does not have keeps its own default). A pipeline parameter and the step parameter it
    feeds share one name, so a refusal names the parameter the user set.
    """
    inputs = step.component_spec.inputs or {}
    if isinstance(check, type):
        names = [name for name in check.names() if name in given or name in inputs]
    else:
        names = list(inspect.signature(check).parameters)
    arguments = {name: given[name] if name in given else inputs[name].default
                 for name in names}
    try:
        return check(**arguments)
    except ValueError as err:
        name = step.python_func.__name__
        raise ValueError(f"{err} (step {name})") from err


def check_local_run(values: Mapping[str, Any]) -> None:
    """What ``tfkfp run`` refuses before its first task: a local path a step would read that
    does not exist here, and a Kubernetes step without a cluster to talk to."""
    check_schemes(values)
    for name in READ_URIS:
        path = values.get(name) or ""
        if path and not uris.is_remote(path) and not uris.glob(path):
            raise ValueError(
                f"{name} {path!r}: no such file or folder on this machine (looked for "
                f"{os.path.abspath(uris.local_path(path))}); give an existing path or "
                "pattern, or a gs:// or s3:// URI")
        if path and not uris.tf_reads(path):
            _check_object_exists(name, path)
    for name, value in kubernetes_settings(values):
        reason = missing_cluster_configuration()
        if reason:
            raise ValueError(
                f"{name} {value!r} talks to a Kubernetes cluster, but this machine has no "
                f"cluster configuration ({reason}): point KUBECONFIG at the cluster's "
                "kubeconfig (e.g. `kind export kubeconfig` or `gcloud container clusters "
                "get-credentials`), or run the pipeline on the cluster with `tfkfp submit`")


def check_schemes(values: Mapping[str, Any]) -> None:
    """A URI whose scheme no step reads or writes (``hdfs://``, ``az://``...), named."""
    for name in (*READ_URIS, *WRITE_URIS):
        reason = uris.unsupported_scheme(str(values.get(name) or ""))
        if reason:
            raise ValueError(f"{name} {reason}")


def _check_object_exists(name: str, uri: str) -> None:
    """An s3:// or minio:// input is looked for before the run (a listing, no download)."""
    try:
        found = uris.glob(uri) or uris.isdir(uri)
    except OSError as err:
        raise ValueError(f"{name} {uri!r}: the object store answered {err}; check "
                         "AWS_ENDPOINT_URL and the credentials (AWS_ACCESS_KEY_ID, "
                         "AWS_SECRET_ACCESS_KEY)") from err
    if not found:
        raise ValueError(f"{name} {uri!r}: no such object or prefix in the store")


def check_cluster_run(values: Mapping[str, Any], mounted: Sequence[str] = ()) -> None:
    """What a run on a cluster refuses (``tfkfp submit``, ``tfkfp check``): a path of this
    machine, which no step's pod can read or write, unless it is under one of ``mounted``
    (folders every step's pod mounts at the same path), and a scheme no step reads."""
    check_schemes(values)
    for name in (*READ_URIS, *WRITE_URIS, *written_places(values)):
        path = values.get(name) or ""
        if path and not uris.is_remote(path) and not _under(path, mounted):
            raise ValueError(
                f"{name} {path!r} is a path on this machine, which the run's pods cannot "
                "reach: upload it and pass its gs:// or s3:// URI (e.g. gcloud storage cp, "
                "aws s3 cp), or, if every step's pod mounts that folder at the same path, "
                f"say so with --mounted {_top_folder(path)}")


def written_places(values: Mapping[str, Any]) -> List[str]:
    """The parameters of PLACE_OR_WORD whose value here is a place, not one of the words."""
    return [name for name, words in PLACE_OR_WORD.items()
            if str(values.get(name) or "") not in words]


def kubernetes_settings(values: Mapping[str, Any]) -> List[tuple]:
    """(parameter, value) of each setting whose step talks to the Kubernetes API."""
    return [(name, values[name]) for name, kinds in KUBERNETES_VALUES.items()
            if values.get(name) in kinds]


def missing_cluster_configuration() -> str:
    """Why the Kubernetes client would find no cluster here; empty when it would (a pod's
    service account, or a kubeconfig it can read), as common/platform/kube_api.py looks."""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ""
    import yaml
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    where = os.environ.get("KUBECONFIG") or config.KUBE_CONFIG_DEFAULT_LOCATION
    try:
        config.list_kube_config_contexts(config_file=os.environ.get("KUBECONFIG"))
    except (ConfigException, OSError, yaml.YAMLError) as err:
        return f"kubeconfig {where}: {' '.join(str(err).split()) or type(err).__name__}"
    return ""


def _under(path: str, folders: Sequence[str]) -> bool:
    path = os.path.normpath(uris.local_path(path))
    return any(os.path.isabs(f) and os.path.commonpath([path, os.path.normpath(f)])
               == os.path.normpath(f) for f in folders if os.path.isabs(path))


def _top_folder(path: str) -> str:
    path = os.path.abspath(uris.local_path(path))
    return os.path.dirname(path) if os.path.splitext(path)[1] else path
