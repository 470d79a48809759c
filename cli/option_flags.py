"""Command-line flags read from a step's options (common.platform.step_options): a flag's
default, choices and help are the setting's own, so a command runs the step as the
pipelines' step does and says so in one place."""

import argparse
import dataclasses
import typing
from typing import Any


def add_flag(parser, options: type, name: str, **overrides: Any) -> argparse.Action:
    """``--a-setting`` for ``options``' setting ``name``: its type, default, choices and
    meaning; ``overrides`` are argparse's own keywords, for what a flag says differently
    (a metavar, a longer help)."""
    field = next(f for f in dataclasses.fields(options) if f.name == name)
    default = options.defaults()[name]
    kind = typing.get_origin(field.type) or field.type
    flag: dict = {"default": default, "help": options.meaning(name)}
    if kind is list:
        flag.update(action="extend", nargs="+")
    elif kind in (int, float):
        flag["type"] = kind
    if options.choices(name):
        flag["choices"] = list(options.choices(name))
    flag.update(overrides)
    if "help" not in overrides:
        flag["help"] += f" (default {_shown(flag['default'])})"
    flag["help"] = flag["help"].replace("%", "%%")  # argparse formats help with %
    return parser.add_argument(f"--{name.replace('_', '-')}", dest=name, **flag)


def _shown(default: Any) -> str:
    return f"{default:g}" if isinstance(default, float) else repr(default) if default in (
        "", [], {}) else str(default)
