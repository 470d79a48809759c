"""A step's default is written in one place (its options or core module) plus the literal of
its KFP component signature, whose source is copied into the pod: the pipelines take theirs
from the component (pipelines/step_defaults.py). This edits a copy of the tree as someone
changing ``max_error_fraction`` would, and runs the drift checks there."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# The two files a change of batch_predict's max_error_fraction default touches.
EDITS = {"components/batch_predict/merge.py": ("MAX_ERROR_FRACTION = 0.01",
                                               "MAX_ERROR_FRACTION = 0.02"),
         "components/batch_predict/component.py": ("max_error_fraction: float = 0.01",
                                                   "max_error_fraction: float = 0.02")}
COMPILE = """
import sys, yaml
from tfkfp.pipelines import registry
for name in ("training", "batch_prediction"):
    registry.compile_pipeline(name, f"{sys.argv[1]}/{name}.yaml")
"""


def copy_of_the_tree(tmp_path):
    """The tree, importable as ``tfkfp`` from ``tmp_path/site`` (PYTHONPATH comes before
    the editable install's finder)."""
    tree = tmp_path / "site" / "tfkfp"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", "node_modules", ".pytest_cache"))
    return tree


def edited_copy(tmp_path, paths):
    tree = copy_of_the_tree(tmp_path)
    for path in paths:
        old, new = EDITS[path]
        text = (tree / path).read_text()
        assert text.count(old) >= 1, path
        (tree / path).write_text(text.replace(old, new))
    return tree, {**os.environ, "PYTHONPATH": str(tmp_path / "site")}


def drift_checks(tree, env):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/pipelines/test_docs.py", "-k", "defaults or one_thing"],
        env=env, cwd=tree, capture_output=True, text=True, timeout=600)


def test_changing_a_step_default_touches_two_files(tmp_path):
    tree, env = edited_copy(tmp_path, EDITS)
    done = subprocess.run([sys.executable, "-c", COMPILE, str(tmp_path)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("training", "batch_prediction"):
        with open(tmp_path / f"{name}.yaml") as f:
            root = yaml.safe_load(f)["root"]["inputDefinitions"]["parameters"]
        assert root["max_error_fraction"]["defaultValue"] == 0.02, name
    drift = drift_checks(tree, env)
    assert drift.returncode == 0, drift.stdout[-3000:]
    assert "passed" in drift.stdout


def test_the_drift_check_names_the_literal_a_change_missed(tmp_path):
    tree, env = edited_copy(tmp_path, ["components/batch_predict/merge.py"])
    drift = drift_checks(tree, env)
    assert drift.returncode == 1
    assert "max_error_fraction: 0.01 in component batch_predict, but 0.02" in drift.stdout
