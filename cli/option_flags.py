"""Command-line flags read from a step's options (common.platform.step_options): a flag's
default, choices and help are the setting's own, so a command runs the step as the
pipelines' step does and says so in one place."""

import argparse
import dataclasses
import typing
from typing import Any


def add_flag(parser, options: type, name: str, flag: str = "", **overrides: Any
             ) -> argparse.Action:
    """``--a-setting`` (or ``flag``) for ``options``' setting ``name``: its type, default,
    choices and meaning; ``overrides`` are argparse's own keywords, for what a flag says
    differently (a metavar, a longer help)."""
    field = next(f for f in dataclasses.fields(options) if f.name == name)
    default = options.defaults().get(name)
    kind = typing.get_origin(field.type) or field.type
    spec: dict = {"default": default, "help": options.meaning(name)}
    if kind is list:
        spec.update(action="extend", nargs="+")
    elif kind in (int, float):
        spec["type"] = kind
    if options.choices(name):
        spec["choices"] = list(options.choices(name))
    spec.update(overrides)
    if "help" not in overrides and not spec.get("required"):
        spec["help"] += f" (default {_shown(spec['default'])})"
    spec["help"] = spec["help"].replace("%", "%%")  # argparse formats help with %
    return parser.add_argument(flag or f"--{name.replace('_', '-')}", dest=name, **spec)


def _shown(default: Any) -> str:
    return f"{default:g}" if isinstance(default, float) else repr(default) if default in (
        "", [], {}) else str(default)
