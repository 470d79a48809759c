"""The architecture's rules: core never imports kfp, KFP modules never import TF eagerly,
every component compiles into the suite's image."""

import ast
import importlib
import pathlib

import pytest
import yaml
from kfp import compiler

from tfkfp.components._image import IMAGE

ROOT = pathlib.Path(__file__).resolve().parents[1]
COMPONENTS = ROOT / "components"
CORE_FILES = sorted(COMPONENTS.glob("*/core.py")) + sorted((COMPONENTS / "common").glob("*.py"))
KFP_FILES = sorted(COMPONENTS.glob("*/component.py")) + sorted((ROOT / "pipelines").glob("*.py"))


def imported_modules(path, module_scope_only=False):
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_scope_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("path", CORE_FILES + sorted(COMPONENTS.glob("*/[!c]*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_core_code_never_imports_kfp(path):
    if path.name == "component.py":
        pytest.skip("component modules are the KFP layer")
    bad = [m for m in imported_modules(path) if m == "kfp" or m.startswith("kfp.")]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; only component.py may"


@pytest.mark.parametrize("path", KFP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_kfp_modules_do_not_import_tensorflow_at_module_scope(path):
    heavy = ("tensorflow", "tf_keras", "keras")
    bad = [m for m in imported_modules(path, module_scope_only=True)
           if m.split(".")[0] in heavy]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad} at module scope"


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
