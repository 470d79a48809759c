"""A pipeline parameter that feeds a step under its own name takes the step's default.

A parameter name means one thing everywhere (one type, one default: the docs test checks
it), so its default is written once, in the step's KFP component signature, the one
literal the drift test holds to the step's options. Pipeline functions run at compile time,
so they read it here: changing a step's default changes every pipeline that feeds it.
"""

import copy
import types
from typing import Any, Dict


def defaults_of(*steps) -> types.SimpleNamespace:
    """The defaults of ``steps``' component parameters, by name (required ones left out)."""
    found = {}
    for step in steps:
        for name, spec in (step.component_spec.inputs or {}).items():
            if spec.optional and name not in found:
                found[name] = copy.deepcopy(spec.default)
    return types.SimpleNamespace(**found)


def by_name(step, scope: Dict[str, Any], **wired: Any) -> Dict[str, Any]:
    """The arguments a pipeline passes ``step`` from its own parameters of the step's names:
    each pipeline parameter in ``scope`` (the pipeline function's ``locals()``) that is
    also an input of ``step``, so a pipeline that passes a step's settings through says
    so once; ``wired`` are the arguments wired otherwise (an artifact, a loop item, a
    constant) and win. The compiled YAML shows the wiring (and the golden test holds it)."""
    from kfp.dsl.pipeline_channel import PipelineParameterChannel

    inputs = step.component_spec.inputs or {}
    passed = {name: value for name, value in scope.items()
              if name in inputs and isinstance(value, PipelineParameterChannel)}
    return {**passed, **wired}
