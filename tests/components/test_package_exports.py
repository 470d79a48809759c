"""Every component package re-exports its component.py's KFP ops, lazily: ``from
tfkfp.components.train import train`` gives the KFP component, while importing the package
and its core imports no kfp (core code runs in images without it)."""

import importlib
import pathlib
import subprocess
import sys

import pytest

COMPONENTS = pathlib.Path(__file__).resolve().parents[2] / "components"
PACKAGES = sorted(p.parent.name for p in COMPONENTS.glob("*/component.py"))


def ops_of(component_module):
    """The KFP components a component.py defines (not those it imports)."""
    return sorted(name for name, obj in vars(component_module).items()
                  if hasattr(obj, "component_spec")
                  and getattr(getattr(obj, "python_func", None), "__module__", None)
                  == component_module.__name__)


def test_every_component_folder_is_covered():
    assert PACKAGES and "shard_tfrecords" in PACKAGES and "common" not in PACKAGES


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_the_ops_of_component_py_and_resolves_to_them(name):
    package = importlib.import_module(f"tfkfp.components.{name}")
    component = importlib.import_module(f"tfkfp.components.{name}.component")
    assert sorted(package.__all__) == ops_of(component)
    for op in package.__all__:
        assert getattr(package, op) is getattr(component, op)
        assert op in dir(package)


@pytest.mark.parametrize("name", PACKAGES)
def test_the_package_attribute_is_the_op_not_the_core_function(name):
    package = importlib.import_module(f"tfkfp.components.{name}")
    core = importlib.import_module(f"tfkfp.components.{name}.core")
    for op in package.__all__:
        assert hasattr(getattr(package, op), "component_spec")
        if hasattr(core, op):
            assert getattr(package, op) is not getattr(core, op)


def test_from_import_gives_the_op_and_submodules_still_import():
    from tfkfp.components.shard_tfrecords import core, fingerprint_input, shard_tfrecords
    from tfkfp.components.shard_tfrecords.component import shard_tfrecords as op

    assert shard_tfrecords is op and hasattr(fingerprint_input, "component_spec")
    assert core.__name__ == "tfkfp.components.shard_tfrecords.core"


def test_an_unknown_name_is_an_attribute_error():
    package = importlib.import_module("tfkfp.components.train")
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        package.nothing  # noqa: B018


# In one fresh Python (TensorFlow imported once): each package and its core, then whether
# kfp came along, and with which package.
LIGHT_IMPORT = """
import importlib, sys
for name in sys.argv[1:]:
    package = importlib.import_module(f"tfkfp.components.{name}")
    importlib.import_module(f"tfkfp.components.{name}.core")
    assert set(package.__all__) <= set(dir(package)), name  # dir() names the ops unloaded
    assert not set(package.__all__) & set(vars(package)), name  # not fetched yet
    if "kfp" in sys.modules:
        sys.exit(f"importing tfkfp.components.{name} and its core imported kfp")
print("no kfp")
"""


def test_importing_the_packages_and_their_core_leaves_kfp_out():
    result = subprocess.run([sys.executable, "-c", LIGHT_IMPORT, *PACKAGES],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "no kfp"
