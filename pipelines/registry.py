"""Every pipeline of the suite by name, compiling them, and checking parameters against them."""

import importlib
import json
import os
from typing import Any, Callable, Dict, List

PIPELINES = {"training": "tfkfp.pipelines.training",
             "batch_prediction": "tfkfp.pipelines.batch_prediction",
             "edge_export": "tfkfp.pipelines.edge_export",
             "serving": "tfkfp.pipelines.serving"}
HERE = os.path.dirname(os.path.abspath(__file__))


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


def for_cluster(name: str, gpu=None, sizes: str = "cluster") -> Callable:
    """The pipeline as it goes to a cluster: ``gpu`` (an accelerator.Gpu) puts training's
    train step on GPUs; pipelines without a train step are unchanged. ``sizes`` is the
    profile of pipelines/resources.py the steps' pods are sized by (kind: a laptop)."""
    from tfkfp.pipelines import resources

    pipeline = load(name)
    if gpu is not None and name == "training":
        from tfkfp.pipelines.training import make_training

        pipeline = make_training(gpu)
    return pipeline if sizes == "cluster" else resources.sized(pipeline, sizes)


def compile_pipeline(name: str, path: str, gpu=None, sizes: str = "cluster",
                     image: str = "") -> str:
    """Compile to ``path``; with ``image`` (REGISTRY/NAME:TAG), its steps run that image."""
    from kfp import compiler

    from tfkfp.pipelines import images

    if image:
        images.check_image(image)  # before anything is written
    compiler.Compiler().compile(for_cluster(name, gpu, sizes), path)
    return images.retarget(path, image) if image else path


def parse_parameters(name: str, pairs: List[str]) -> Dict[str, Any]:
    """``key=value`` strings as the pipeline's typed arguments; every required input given."""
    inputs = load(name).component_spec.inputs or {}
    values: Dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ParameterError(f"--set {pair!r}: expected KEY=VALUE")
        if key not in inputs:
            raise ParameterError(f"pipeline {name!r} has no parameter {key!r}; its parameters "
                                 f"are {', '.join(sorted(inputs))}")
        values[key] = _convert(key, text, inputs[key].type)
    missing = sorted(k for k, spec in inputs.items() if not spec.optional and k not in values)
    if missing:
        raise ParameterError(f"pipeline {name!r} needs {', '.join(missing)}: pass "
                             + " ".join(f"--set {k}=..." for k in missing))
    check = getattr(importlib.import_module(PIPELINES[name]), "check_arguments", None)
    if check is not None:
        try:
            check(values)
        except ValueError as err:
            raise ParameterError(f"pipeline {name!r}: {err}") from err
    return values


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
