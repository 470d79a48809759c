"""Refusing a pipeline request before a run starts, with the steps' own option checks.

Each pipeline's ``check_arguments`` (called by ``registry.parse_parameters``, so by ``tfkfp
run`` and ``tfkfp submit``) hands what it would pass to a step to that component's own
``check_options``: the allowed values (modes, formats, compressions, policies) live in the
components, once. Anything that needs the data (a label column, a file) is the task's to
refuse.
"""

import contextlib
import inspect
import os
import sys
from typing import Any, Callable, Dict, Iterator, Mapping

# What the pipelines pass export_tflite in place of a quantization: freeze_quantize's chosen model.
QUANTIZED = "freeze_quantize's tflite_model"


def with_defaults(pipeline, arguments: Mapping[str, Any]) -> Dict[str, Any]:
    """The pipeline's arguments, with its defaults for those not given."""
    inputs = pipeline.component_spec.inputs or {}
    return {**{name: spec.default for name, spec in inputs.items()}, **arguments}


def pick(values: Mapping[str, Any], *names: str) -> Dict[str, Any]:
    return {name: values[name] for name in names}


def check_step(step, check: Callable, given: Mapping[str, Any]) -> None:
    """Call a component's own ``check`` on what the pipeline gives ``step``.

    ``given`` holds the step's arguments under the step's parameter names; the step's own
    defaults fill every other parameter ``check`` takes. A pipeline parameter and the step
    parameter it feeds share one name, so a refusal names the parameter the user set.
    """
    inputs = step.component_spec.inputs or {}
    arguments = {name: given[name] if name in given else inputs[name].default
                 for name in inspect.signature(check).parameters}
    try:
        check(**arguments)
    except ValueError as err:
        name = step.python_func.__name__
        raise ValueError(f"{err} (step {name})") from err


@contextlib.contextmanager
def native_stderr_hushed() -> Iterator[None]:
    """Send file descriptor 2 to the null device for the block.

    TensorFlow's C++ start-up lines (the CUDA probe among them) are written before its log
    level applies, so only this keeps them off the console while a check imports it. Python
    errors still propagate as exceptions.
    """
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
