"""The architecture's rules: core never imports kfp, KFP modules never import TF eagerly,
components meet only through common or declared public modules, a component's errors live in
its errors.py, and every component compiles into the suite's image."""

import ast
import builtins
import importlib
import pathlib
import re

import pytest
import yaml
from kfp import compiler

from tfkfp.components._image import IMAGE

ROOT = pathlib.Path(__file__).resolve().parents[1]
COMPONENTS = ROOT / "components"
PACKAGE = "tfkfp.components."
ALL_FILES = sorted(COMPONENTS.rglob("*.py"))  # every module, subpackages included
PIPELINE_FILES = sorted((ROOT / "pipelines").glob("*.py"))
CLI_FILES = sorted((ROOT / "cli").glob("*.py"))
KFP_FILES = sorted(COMPONENTS.glob("*/component.py")) + PIPELINE_FILES + CLI_FILES
SHARED = ("common", "_image")  # what every component may import

# The modules of a component that other components may import, and why. Everything else in a
# component folder is its own business and may change without notice to the others.
PUBLIC = {
}

def rel(path):
    return str(path.relative_to(ROOT))


def imported_modules(path, module_scope_only=False):
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_scope_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def imported_names(path):
    """(module, [module.name for each imported name]) of every import in the file."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((alias.name, [alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [f"{node.module}.{alias.name}" for alias in node.names]


def component_of(path) -> str | None:
    parts = path.relative_to(COMPONENTS).parts
    return parts[0] if len(parts) > 1 else None


def is_public(target: str) -> bool:
    return any(target == m or target.startswith(m + ".") for m in PUBLIC)


@pytest.mark.parametrize("path", [p for p in ALL_FILES if p.name != "component.py"], ids=rel)
def test_core_code_never_imports_kfp(path):
    bad = [m for m in imported_modules(path) if m == "kfp" or m.startswith("kfp.")]
    assert not bad, f"{rel(path)} imports {bad}; only component.py may"


@pytest.mark.parametrize("path", ALL_FILES, ids=rel)
def test_components_meet_only_through_common_or_declared_public_modules(path):
    own = component_of(path)
    for module, names in imported_names(path):
        if not module.startswith(PACKAGE):
            continue
        target = module[len(PACKAGE):]
        package = target.split(".")[0]
        if package in (own, *SHARED):
            continue
        assert own != "common", (f"{rel(path)} imports {module}: common serves every "
                                 "component and imports none")
        targets = [n[len(PACKAGE):] for n in names]
        assert is_public(target) or all(is_public(t) for t in targets), (
            f"{rel(path)} imports {', '.join(targets)} of component {package}; import it "
            f"through common or a public module declared in PUBLIC ({', '.join(PUBLIC)})")


# common's layers, lowest first
ROOMS = ("platform", "charts", "data", "model", "training", "tflite", "endpoint", "beam")
COMMON = COMPONENTS / "common"


def test_common_holds_its_modules_in_its_rooms():
    loose = [p.name for p in COMMON.glob("*.py") if p.name != "__init__.py"]
    rooms = sorted(p.name for p in COMMON.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert not loose, f"components/common/{loose} belong in one of its rooms {ROOMS}"
    assert rooms == sorted(ROOMS), f"common's rooms are {rooms}; the layers are {ROOMS}"


@pytest.mark.parametrize("path", sorted(COMMON.glob("*/*.py")), ids=rel)
def test_common_rooms_import_only_their_own_and_lower_rooms(path):
    """platform imports no other room, data only platform, model platform and data, training
    those three, tflite those four, beam any: no arrow runs back up a layer."""
    room = path.relative_to(COMMON).parts[0]
    allowed = ROOMS[:ROOMS.index(room) + 1]
    for module, names in imported_names(path):
        if module == PACKAGE + "common":  # from tfkfp.components.common import data
            targets = [n[len(PACKAGE + "common."):] for n in names]
        elif module.startswith(PACKAGE + "common."):
            targets = [module[len(PACKAGE + "common."):]]
        else:
            continue
        upward = [t for t in targets if t.split(".")[0] not in allowed]
        assert not upward, (f"{rel(path)} ({room}) imports common.{upward[0]}; the {room} "
                            f"room may import only {', '.join(allowed)}")


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_declared_public_modules_exist(name):
    assert (COMPONENTS / f"{name.replace('.', '/')}.py").is_file(), f"PUBLIC names {name}"


def is_exception(node: ast.ClassDef) -> bool:
    bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
    return any(b.endswith(("Error", "Exception")) or (
        isinstance(getattr(builtins, b, None), type)
        and issubclass(getattr(builtins, b), BaseException)) for b in bases)


@pytest.mark.parametrize("path", [
    p for p in ALL_FILES if component_of(p) not in (None, "common")
    and p.name != "errors.py"], ids=rel)
def test_component_error_classes_live_in_errors_py(path):
    """A component's own exceptions live in its errors.py. common's live beside the helper
    whose contract they are part of (schema.SchemaError, litert.LiteRTError, the tflite_*
    errors), so importing a helper gives its errors."""
    found = [n.name for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.ClassDef) and is_exception(n)]
    assert not found, f"{rel(path)} defines {found}; move them to {component_of(path)}/errors.py"


@pytest.mark.parametrize("path", ALL_FILES + PIPELINE_FILES, ids=rel)
def test_only_the_command_imports_the_command(path):
    """The CLI sits on top: pipelines and components are loaded by KFP and by users' own code,
    which must not drag the command's console machinery along."""
    assert not [m for m in imported_modules(path) if m.startswith("tfkfp.cli")]


@pytest.mark.parametrize("path", KFP_FILES, ids=rel)
def test_kfp_modules_do_not_import_tensorflow_at_module_scope(path):
    heavy = ("tensorflow", "tf_keras", "keras")
    bad = [m for m in imported_modules(path, module_scope_only=True)
           if m.split(".")[0] in heavy]
    assert not bad, f"{rel(path)} imports {bad} at module scope"


def component_functions():
    for path in sorted(COMPONENTS.glob("*/component.py")):
        module = importlib.import_module(f"tfkfp.components.{path.parent.name}.component")
        yield path.parent.name, getattr(module, path.parent.name)


@pytest.mark.parametrize("name,component", list(component_functions()))
def test_every_component_compiles_into_the_suite_image(name, component, tmp_path):
    out = tmp_path / f"{name}.yaml"
    compiler.Compiler().compile(component, str(out))
    spec = yaml.safe_load(out.read_text())
    executors = spec["deploymentSpec"]["executors"]
    assert executors, f"{name} compiled with no executor"
    for executor in executors.values():
        assert executor["container"]["image"] == IMAGE
    assert "pip install" not in out.read_text(), f"{name} installs packages at run time"


def test_component_folder_names_match_their_function_and_tests():
    for path in sorted(COMPONENTS.glob("*/component.py")):
        name = path.parent.name
        assert (ROOT / "tests" / "components" / name).is_dir(), f"no tests for {name}"
        assert (path.parent / "core.py").exists(), f"{name} has no core.py"


# A string that is a file's name, as a step writes one and another reads it back.
FILE_NAME = re.compile(r"^[\w.*-]+\.(json|jsonl|txt|csv|tflite|pb|yaml|npz|html|svg|db|log)$")
# Modules that spell such a name themselves, and why.
SPELLS_ITS_OWN = {"components/export_tflite/example_app.py":
                  "an app's example: it runs with LiteRT alone, importing nothing of tfkfp"}


def test_a_file_name_two_steps_use_is_owned_by_common():
    """A file one step writes and another reads (a trial's result.json, a Dataset's
    schema.json) is named once, in common, which both import: a component that spells it
    itself, beside common's name or another component's, keeps a contract no one else can
    see change."""
    owners = {}
    for path in ALL_FILES:
        folder = component_of(path)
        if folder is None or rel(path) in SPELLS_ITS_OWN:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and FILE_NAME.match(node.value):
                owners.setdefault(node.value, {}).setdefault(folder, rel(path))
    shared = {name: where for name, where in owners.items() if len(where) > 1}
    assert not shared, (f"file names spelled in several component folders (common counts): "
                        f"use common's name for them: {shared}")
