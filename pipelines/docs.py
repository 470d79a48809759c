"""The generated parts of the docs: the parameter tables, from the components' and
pipelines' docstrings (which KFP also copies into the compiled YAML and the UI); the sizes
table, from pipelines/resources.py; and each pipeline's DAG picture, from its compiled YAML
(pipelines/dag.py). Each lives between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in
the files of FILES.

The command that rewrites them, ``python -m tfkfp.cli.docs --write``, lives in cli/docs.py:
it adds the one section this package cannot write, the ``tfkfp`` command's reference, which
sits above the pipelines.
"""

import argparse
import functools
import importlib
import importlib.util
import pkgutil
import re
import sys
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from kfp.dsl.base_component import BaseComponent

from tfkfp import components as package
from tfkfp.pipelines import catalogue, dag, registry, resources

REQUIRED = "required"
PARAMETERS, SIZES = "parameters", "sizes"


def begin(section: str) -> str:
    return f"<!-- {section}:begin -->"


def end(section: str) -> str:
    return f"<!-- {section}:end -->"


BEGIN, END = begin(PARAMETERS), end(PARAMETERS)
SIZES_BEGIN, SIZES_END = begin(SIZES), end(SIZES)


def component_section(folder: str) -> str:
    """The section that holds a component folder's catalogue README."""
    return f"component:{folder}"


def dag_section(name: str) -> str:
    """The section that holds the named pipeline's DAG picture."""
    return f"dag:{name}"


# Which generated sections each file holds, by its path from the checkout's root.
FILES: Dict[str, List[str]] = {
    "README.md": [dag_section("training")],
    "docs/reference/parameters.md": [PARAMETERS],
    "docs/reference/sizes.md": [SIZES],
    "docs/reference/pipelines.md": [dag_section(n) for n in registry.names()],
    **{f"components/{folder}/README.md": [component_section(folder)]
       for folder in catalogue.folders()},
}


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


def html_cell(text: str) -> str:
    """Help text for a Markdown table cell: one line, ``<name>`` kept visible."""
    return _cell(" ".join(text.split())).replace("<", "&lt;").replace(">", "&gt;")


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


def component_readme(folder: str) -> str:
    """A component folder's README, as the catalogue's template lays it out: what each
    component does, its inputs and outputs, how to load it, and its metadata.yaml."""
    module = importlib.import_module(f"{package.__name__}.{folder}.component")
    defined = [(n, c) for n, c in vars(module).items() if isinstance(c, BaseComponent)]
    section = component_section(folder)
    lines = [begin(section), "", f"# {folder}", ""]
    for name, component in defined:
        summary = " ".join(_docstring(component).split("\n\n")[0].split())
        lines += [f"## `{name}`", "", summary, "", *table(component), ""]
    names = ", ".join(name for name, _ in defined)
    lines += ["## Usage", "", "```python",
              f"from tfkfp.components.{folder} import {names}", "```", "",
              "Each runs in the suite's image; `tfkfp compile --image` retargets a compiled "
              "pipeline at yours.", "", "## Metadata", "", *catalogue.metadata_lines(folder)]
    documentation = catalogue.links(folder).get("documentation")
    if documentation:
        lines += ["", "## Additional resources", "",
                  f"- Documentation: [{documentation}](../../{documentation})"]
    return "\n".join(lines + ["", end(section)])


def dag_picture(name: str) -> str:
    """The named pipeline's tasks as a Mermaid flowchart, between its markers."""
    section = dag_section(name)
    return "\n".join([begin(section), "", dag.mermaid(name), "", end(section)])


Sections = Mapping[str, Callable[[], str]]


def sections(extra: Sections | None = None) -> Dict[str, Callable[[], str]]:
    """Every generated section by name (``extra``'s too): the function that writes it,
    markers included."""
    found: Dict[str, Callable[[], str]] = {PARAMETERS: generated, SIZES: sizes, **(extra or {})}
    for name in registry.names():
        found[dag_section(name)] = functools.partial(dag_picture, name)
    for folder in catalogue.folders():
        found[component_section(folder)] = functools.partial(component_readme, folder)
    return found


def rewrite(text: str, required: Sequence[str] = (), where: str = "the file",
            extra: Sections | None = None) -> str:
    """``text`` with every generated section it holds (``extra``'s too) written afresh. A
    section named in ``required`` that is missing, or a text that holds none, raises
    ValueError."""
    found = []
    for section, make in sections(extra).items():
        pattern = re.compile(re.escape(begin(section)) + ".*?" + re.escape(end(section)), re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _, make=make: make(), text)
            found.append(section)
    missing = [s for s in required if s not in found]
    if missing:
        raise ValueError(f"{where} has no " + ", no ".join(
            f"{begin(s)} ... {end(s)}" for s in missing) + " section")
    if not found:
        raise ValueError(f"{where} holds no generated section ({begin('NAME')} ... "
                         f"{end('NAME')}, NAME one of {', '.join(sections(extra))})")
    return text


def write(path: str, files: Mapping[str, List[str]] = FILES,
          extra: Sections | None = None) -> bool:
    """Rewrite the generated sections of the file at ``path``; True if it changed."""
    with open(path) as f:
        text = f.read()
    new = rewrite(text, files.get(path.replace("\\", "/").removeprefix("./"), ()), path, extra)
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return new != text


def main(argv, prog: str, files: Mapping[str, List[str]], extra: Sections) -> int:
    """The command of cli/docs.py: print the parameter tables, or rewrite ``files``."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Print the parameter tables, or rewrite the generated sections "
        "of the docs (run from the checkout's root).")
    parser.add_argument("--write", nargs="*", metavar="FILE",
                        help="rewrite the generated sections of these files (default: "
                        + ", ".join(files) + ")")
    args = parser.parse_args(argv)
    if args.write is None:
        print(generated())
        return 0
    for path in args.write or list(files):
        try:
            print(f"{'rewrote' if write(path, files, extra) else 'unchanged'} {path}")
        except (OSError, ValueError) as err:
            print(f"{parser.prog}: error: {err}", file=sys.stderr)
            return 1
    return 0

