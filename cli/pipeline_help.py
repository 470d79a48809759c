"""``tfkfp run --help`` and ``tfkfp run PIPELINE --help``: the pipelines, and one pipeline's
parameters with their types, defaults and meaning (its docstring, as KFP reads it)."""

import argparse
import json
import textwrap
from typing import List

from tfkfp.pipelines import registry

WIDTH = 96


def pipelines_line() -> str:
    return (f"Pipelines: {', '.join(registry.names())}; `tfkfp run PIPELINE --help` lists a "
            "pipeline's parameters")


def parameter_lines(name: str) -> List[str]:
    """The pipeline's purpose, then each parameter: its type, default (or "required") and
    its description, indented."""
    pipeline = registry.load(name)
    lines = ["", f"pipeline {name}: {pipeline.description or ''}".rstrip(), "",
             "parameters (--set NAME=VALUE):"]
    for parameter, spec in (pipeline.component_spec.inputs or {}).items():
        kind = spec.type.replace("typing.", "").split("[")[0]
        default = f"default {_shown(spec.default)}" if spec.optional else "required"
        lines.append(f"  {parameter} ({kind}, {default})")
        lines += textwrap.wrap(" ".join((spec.description or "").split()), WIDTH,
                               initial_indent=" " * 6, subsequent_indent=" " * 6)
    return lines


def _shown(value) -> str:
    return json.dumps(value) if isinstance(value, (list, dict, str)) else str(value)


class PipelineHelp(argparse._HelpAction):
    """-h/--help of a command that takes a pipeline name: its usual help, then the named
    pipeline's parameters (when the name comes before --help and is a pipeline)."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help()
        name = getattr(namespace, "name", None)
        if name in registry.names():
            print("\n".join(parameter_lines(name)))
        parser.exit()
