"""Every pipeline of the suite by name, compiling them, and checking parameters against them."""

import importlib
import json
import os
import sys
from typing import Any, Callable, Dict, List, Sequence

from tfkfp.pipelines import checks

PIPELINES = {"training": "tfkfp.pipelines.training",
             "batch_prediction": "tfkfp.pipelines.batch_prediction",
             "edge_export": "tfkfp.pipelines.edge_export",
             "serving": "tfkfp.pipelines.serving",
             "streaming_prediction": "tfkfp.pipelines.streaming_prediction",
             "tuning": "tfkfp.pipelines.tuning"}
HERE = os.path.dirname(os.path.abspath(__file__))
# Where a run happens, for check_values: nowhere in particular, this machine, a cluster.
RUNS_ON = ("", "local", "cluster")
# Renamed pipeline parameters whose old name ``--set`` still takes (docs/reference/names.md):
# pipeline -> old name -> new name.
RENAMED = {"batch_prediction": {"csv_uri": "input_uri"}}


class ParameterError(ValueError):
    """A pipeline parameter that is unknown, of the wrong type, or missing."""


def names() -> List[str]:
    return sorted(PIPELINES)


def load(name: str) -> Callable:
    if name not in PIPELINES:
        raise ParameterError(f"no pipeline {name!r}; the pipelines are {', '.join(names())}")
    return getattr(importlib.import_module(PIPELINES[name]), name)


def golden_path(name: str) -> str:
    """The committed compiled YAML, beside the pipeline's module."""
    return os.path.join(HERE, f"{name}.yaml")


def for_cluster(name: str, gpu=None, sizes: str = "cluster", store=None) -> Callable:
    """The pipeline as it goes to a cluster: ``gpu`` (an accelerator.Gpu) puts training's
    train step on GPUs; pipelines without a train step are unchanged. ``sizes`` is the
    profile of pipelines/resources.py the steps' pods are sized by (kind: a laptop).
    ``store`` (a store_access.StoreAccess) gives every step the object store's keys."""
    from tfkfp.pipelines import resources, store_access

    pipeline = load(name)
    if gpu is not None and name == "training":
        from tfkfp.pipelines.training import make_training

        pipeline = make_training(gpu)
    pipeline = pipeline if sizes == "cluster" else resources.sized(pipeline, sizes)
    return pipeline if store is None else store_access.with_store_access(pipeline, store)


def compile_pipeline(name: str, path: str, gpu=None, sizes: str = "cluster",
                     image: str = "", store=None) -> str:
    """Compile to ``path``; with ``image`` (REGISTRY/NAME:TAG), its steps run that image."""
    from kfp import compiler

    from tfkfp.pipelines import images

    if image:
        images.check_image(image)  # before anything is written
    compiler.Compiler().compile(for_cluster(name, gpu, sizes, store), path)
    return images.retarget(path, image) if image else path


def parse_parameters(name: str, pairs: List[str], runs_on: str = "",
                     mounted: Sequence[str] = ()) -> Dict[str, Any]:
    """``key=value`` strings as the pipeline's typed arguments; every required input given,
    and the values checked (``check_values``)."""
    inputs = load(name).component_spec.inputs or {}
    values = parse_pairs(name, pairs)
    missing = sorted(k for k, spec in inputs.items() if not spec.optional and k not in values)
    if missing:
        raise ParameterError(f"pipeline {name!r} needs {', '.join(missing)}: pass "
                             + " ".join(f"--set {k}=..." for k in missing))
    check_values(name, values, runs_on, mounted)
    return values


def parse_pairs(name: str, pairs: List[str]) -> Dict[str, Any]:
    """``key=value`` strings as the pipeline's typed arguments, unchecked."""
    inputs = load(name).component_spec.inputs or {}
    values: Dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ParameterError(f"--set {pair!r}: expected KEY=VALUE")
        key = _current_name(name, key)
        if key not in inputs:
            raise ParameterError(f"pipeline {name!r} has no parameter {key!r}; its parameters "
                                 f"are {', '.join(sorted(inputs))}")
        values[key] = _convert(key, text, inputs[key].type)
    return values


def _current_name(pipeline: str, key: str) -> str:
    """``key``, or the name a renamed parameter has now (said once on stderr)."""
    new = RENAMED.get(pipeline, {}).get(key)
    if new is None:
        return key
    print(f"tfkfp: {pipeline}'s {key} is now called {new}; --set {key}=... still works",
          file=sys.stderr)
    return new


def check_values(name: str, values: Dict[str, Any], runs_on: str = "",
                 mounted: Sequence[str] = ()) -> None:
    """Refuse, before a run, what the pipeline's steps would refuse (its ``check_arguments``)
    and what cannot work where it runs: ``runs_on`` local (``tfkfp run``: local paths must
    exist, Kubernetes steps need a cluster configuration), cluster (``tfkfp submit`` and
    ``check``: no paths of this machine but under ``mounted``) or empty (neither)."""
    if runs_on not in RUNS_ON:
        raise ValueError(f"runs_on {runs_on!r} is not one of {', '.join(map(repr, RUNS_ON))}")
    check = getattr(importlib.import_module(PIPELINES[name]), "check_arguments", None)
    try:
        if check is not None:
            check(values)
        everything = checks.with_defaults(load(name), values)
        if runs_on == "local":
            checks.check_local_run(everything)
        elif runs_on == "cluster":
            checks.check_cluster_run(everything, mounted)
    except ValueError as err:
        raise ParameterError(f"pipeline {name!r}: {err}") from err


def by_compiled_name(pipeline_name: str) -> str | None:
    """The registry name of the pipeline compiled as ``pipeline_name`` (tfkfp-training ->
    training); None for a pipeline not of this suite."""
    return next((name for name in names() if load(name).name == pipeline_name), None)


def _convert(key: str, text: str, kind: str) -> Any:
    kind = kind.replace("typing.", "").split("[")[0]  # typing.List[str] -> List
    try:
        if kind == "Integer":
            return int(text)
        if kind == "Float":
            return float(text)
        if kind == "Boolean":
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if kind in ("List", "Dict"):
            value = json.loads(text) if text.strip().startswith(("[", "{")) else (
                [t for t in text.split(",") if t] if kind == "List" else None)
            if not isinstance(value, list if kind == "List" else dict):
                raise ValueError(text)
            return value
        return text
    except ValueError as err:
        example = {"Integer": "8", "Float": "0.5", "Boolean": "true", "List": "a,b or [\"a\"]",
                   "Dict": "{\"a\": 1}"}.get(kind, "text")
        raise ParameterError(f"--set {key}={text!r}: {key} takes a value of type {kind}, e.g. "
                             f"{key}={example}") from err
