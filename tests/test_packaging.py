import pathlib
import subprocess
import sys
import zipfile

import pytest
import tomllib
from packaging.requirements import Requirement

from tfkfp.cli import extras
from tfkfp.components._image import __version__

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Distributions that must stay out of the light install (pip install tfkfp).
HEAVY = {"tensorflow", "tf-keras", "tensorboard", "ai-edge-litert", "numpy", "pyarrow", "pillow",
         "scikit-learn", "scipy", "pandas", "kserve", "uvloop", "google-cloud-aiplatform"}


def _names(requirements) -> set:
    return {Requirement(r).name.lower().replace("_", "-") for r in requirements}


def _extras(requirement: str) -> set:
    parsed = Requirement(requirement)
    return set(parsed.extras) if parsed.name == "tfkfp" else set()


def test_every_component_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {f"tfkfp.components.{p.name}" for p in (ROOT / "components").iterdir()
               if (p / "__init__.py").exists()}
    assert folders <= listed, f"add {sorted(folders - listed)} to pyproject packages"


def test_the_light_install_requires_nothing_heavy():
    """pip install tfkfp compiles, checks and submits; what runs steps here is in extras."""
    assert not _names(PROJECT["project"]["dependencies"]) & HEAVY
    assert {"kfp", "kubernetes", "pyyaml"} <= _names(PROJECT["project"]["dependencies"])


def test_each_extra_holds_its_jobs_runtime_and_dev_holds_all():
    optional = PROJECT["project"]["optional-dependencies"]
    assert {"tensorflow", "tf-keras", "ai-edge-litert", "numpy", "pyarrow", "pillow"} <= (
        _names(optional["local"]))
    assert {"kserve", "uvloop"} <= _names(optional["serve"])
    assert any(_extras(r) == {"local"} for r in optional["serve"])
    assert _names(optional["vertex"]) == {"google-cloud-aiplatform"}
    assert "apache-beam" in _names(optional["beam"])
    assert any(_extras(r) == {"local"} for r in optional["beam"])
    assert "optuna" in _names(optional["tune"])
    assert any(_extras(r) == {"local"} for r in optional["tune"])
    assert any(_extras(r) == {"local", "serve", "vertex", "beam", "tune"}
               for r in optional["all"])
    assert any(_extras(r) == {"all"} for r in optional["dev"])
    everything = {n for extra in optional.values() for n in _names(extra)}
    assert "scikit-learn" not in everything, "the demo data ships with the package"


def test_the_commands_name_extras_that_exist():
    optional = PROJECT["project"]["optional-dependencies"]
    assert set(extras.EXTRA_MODULES) | set(extras.COMMAND_EXTRAS.values()) <= set(optional)
    for extra, included in extras.INCLUDES.items():
        assert set(included) <= {e for r in optional[extra] for e in _extras(r)}


def test_license_is_an_spdx_expression_with_its_files_and_a_bounded_backend():
    project = PROJECT["project"]
    assert project["license"] == "Apache-2.0"
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), f"license-files names {name}, which does not exist"
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "10.24432/C50P49" in (ROOT / "NOTICE").read_text()  # the demo digits' source
    setuptools = next(Requirement(r) for r in PROJECT["build-system"]["requires"]
                      if r.startswith("setuptools"))
    assert not setuptools.specifier.contains("76.9")  # SPDX license expressions need 77
    assert not setuptools.specifier.contains("1000")  # bounded below a major not yet tried


@pytest.mark.slow
def test_wheel_holds_the_namespace_packages_and_the_command(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-v", "-w", str(tmp_path), str(ROOT)],
                           check=True, capture_output=True, text=True)
    assert "Deprecat" not in built.stdout + built.stderr  # setuptools' warning blocks
    wheel = next(tmp_path.glob("tfkfp-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tfkfp/components/_image.py" in names
    assert "tfkfp/components/common/data/digits.csv.gz" in names  # the demo data
    assert "tfkfp/components/common/data/README.md" in names  # and its attribution
    assert {f"tfkfp-{__version__}.dist-info/licenses/{name}"
            for name in PROJECT["project"]["license-files"]} <= set(names)
    assert "tfkfp/components/shard_tfrecords/core.py" in names
    assert "tfkfp/cli/main.py" in names
    assert "tfkfp/__init__.py" not in names  # tfkfp is a namespace package
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "tfkfp = tfkfp.cli.main:main" in zipfile.ZipFile(wheel).read(
        entry_points).decode()
