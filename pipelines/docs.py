"""The parameter tables in the README, generated from the components' and pipelines'
docstrings (which KFP also copies into the compiled YAML and the UI), and the sizes table,
from pipelines/resources.py.

``python -m tfkfp.pipelines.docs --write README.md`` rewrites the tables in place.
"""

import argparse
import importlib
import importlib.util
import pkgutil
import re
import sys
from typing import Any, Dict, List, Tuple

from kfp.dsl.base_component import BaseComponent

from tfkfp import components as package
from tfkfp.pipelines import registry, resources

BEGIN, END = "<!-- parameters:begin -->", "<!-- parameters:end -->"
SIZES_BEGIN, SIZES_END = "<!-- sizes:begin -->", "<!-- sizes:end -->"
REQUIRED = "required"


def component_modules() -> List[str]:
    """The component.py module of every folder under components/, in folder order."""
    names = [f"{package.__name__}.{m.name}.component"
             for m in pkgutil.iter_modules(package.__path__) if m.ispkg]
    return sorted(n for n in names if importlib.util.find_spec(n) is not None)


def components() -> List[Tuple[str, BaseComponent]]:
    """(name, component) of every KFP component the suite defines, in definition order within
    a module. A module that fails to import raises: the tables must not silently lose one."""
    found = []
    for name in component_modules():
        module = importlib.import_module(name)
        defined = [(key, value) for key, value in vars(module).items()
                   if isinstance(value, BaseComponent)]
        if not defined:
            raise ValueError(f"{name} defines no KFP component")
        found += defined
    return found


def steps() -> List[Tuple[str, BaseComponent]]:
    """Every component and pipeline, by name: what a user sets parameters on."""
    return components() + [(name, registry.load(name)) for name in registry.names()]


def signature(function) -> Dict[str, Tuple[str, Any]]:
    """Each input of a component or pipeline: (type, default); required inputs have the
    REQUIRED default."""
    return {name: (_kind(param.type), param.default if param.optional else REQUIRED)
            for name, param in (function.component_spec.inputs or {}).items()}


def table(function) -> List[str]:
    """Inputs and outputs of a component or pipeline, described by its docstring."""
    import docstring_parser

    spec = function.component_spec
    parsed = docstring_parser.parse(_docstring(function))
    doc = {p.arg_name: " ".join((p.description or "").split()) for p in parsed.params}
    if parsed.returns is not None:  # a function's return value is the output "Output"
        doc["Output"] = " ".join((parsed.returns.description or "").split())
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for name, param in (spec.inputs or {}).items():
        default = f"`{param.default!r}`" if param.optional else "required"
        lines.append(f"| `{name}` | {_kind(param.type)} | {default} | {_cell(doc.get(name))} |")
    for name, param in (spec.outputs or {}).items():  # a pipeline's: its Returns section
        text = doc.get(name) or " ".join((getattr(param, "description", "") or "").split())
        lines.append(f"| `{name}` | {_kind(param.type)} output | | {_cell(text)} |")
    return lines


def _docstring(function) -> str:
    python_func = getattr(function, "python_func", None) or getattr(function, "pipeline_func",
                                                                     None)
    return (python_func.__doc__ if python_func else function.description) or ""


def _kind(text: str) -> str:
    return text.split("@")[0].replace("system.", "").replace("typing.", "")


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|")


def generated() -> str:
    parts = [BEGIN]
    for name, step in steps():
        kind = "Pipeline" if name in registry.names() else "Component"
        parts += ["", f"### {kind} `{name}`", "", *table(step)]
    return "\n".join(parts + ["", END])


def sizes() -> str:
    """Each step's CPU and memory (request = limit) per profile, its disk, and the largest
    Dataset that disk holds."""
    names = resources.profiles()
    lines = [SIZES_BEGIN, "", "| step | " + " | ".join(
        f"{p}: CPU, memory | {p}: largest Dataset" for p in names) + " |",
        "|---|" + "---|---|" * len(names)]
    for step in resources.PROFILES["cluster"]:
        cells = []
        for profile in names:
            size, largest = resources.PROFILES[profile][step], resources.largest_dataset(
                step, profile)
            cells += [f"{size.cpu}, {size.memory}",
                      "no Dataset" if largest is None else f"{largest:.1f} GiB"]
        lines.append(f"| `{step}` | " + " | ".join(cells) + " |")
    lines += ["", "Local disk (ephemeral storage) of every step, request / limit: " + "; ".join(
        f"{p} {resources.DISK_REQUEST[p]} / {resources.DISK[p]}" for p in names) + ".", "",
        SIZES_END]
    return "\n".join(lines)


def rewrite(readme: str) -> str:
    for begin, end, text in ((BEGIN, END, generated), (SIZES_BEGIN, SIZES_END, sizes)):
        pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
        if not pattern.search(readme):
            raise ValueError(f"the README has no {begin} ... {end} section")
        readme = pattern.sub(lambda _, text=text: text(), readme)
    return readme


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfkfp.pipelines.docs")
    parser.add_argument("--write", metavar="README", help="rewrite the tables in this file")
    args = parser.parse_args(argv)
    if not args.write:
        print(generated())
        return 0
    with open(args.write) as f:
        text = rewrite(f.read())
    with open(args.write, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
