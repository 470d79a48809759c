"""A pipeline parameter that feeds a step under its own name takes the step's default.

A parameter name means one thing everywhere (one type, one default: the docs test checks
it), so its default is written once, in the step's KFP component signature, the one
literal the drift test holds to the step's options. Pipeline functions run at compile time,
so they read it here: changing a step's default changes every pipeline that feeds it.
"""

import copy
import types


def defaults_of(*steps) -> types.SimpleNamespace:
    """The defaults of ``steps``' component parameters, by name (required ones left out)."""
    found = {}
    for step in steps:
        for name, spec in (step.component_spec.inputs or {}).items():
            if spec.optional and name not in found:
                found[name] = copy.deepcopy(spec.default)
    return types.SimpleNamespace(**found)
