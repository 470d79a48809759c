import pathlib
import subprocess
import sys
import zipfile

import pytest
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_component_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {f"tfkfp.components.{p.name}" for p in (ROOT / "components").iterdir()
               if (p / "__init__.py").exists()}
    assert folders <= listed, f"add {sorted(folders - listed)} to pyproject packages"


@pytest.mark.slow
def test_wheel_holds_the_namespace_packages_and_the_command(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(ROOT)], check=True)
    wheel = next(tmp_path.glob("tfkfp-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tfkfp/components/_image.py" in names
    assert "tfkfp/components/shard_tfrecords/core.py" in names
    assert "tfkfp/cli/main.py" in names
    assert "tfkfp/__init__.py" not in names  # tfkfp is a namespace package
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "tfkfp = tfkfp.cli.main:main" in zipfile.ZipFile(wheel).read(
        entry_points).decode()
