"""The light install (``pip install tfkfp``: kfp and no runtime) compiles, checks and submits;
the commands that run steps here say which extra to install.

The fast tests run the command in a Python where the heavy modules cannot be imported (None
in sys.modules), so any import of one on the way fails them. The slow test installs this
checkout without extras into a fresh virtual environment and runs the command there.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import venv

import pytest

from tfkfp.cli import extras
from tfkfp.components._image import IMAGE
from tfkfp.pipelines import registry

ROOT = pathlib.Path(__file__).resolve().parents[1]
# What the light install leaves out: every extra's modules, and what the old install brought.
HEAVY = sorted({m for modules in extras.EXTRA_MODULES.values() for m in modules}
               | {"sklearn", "scipy", "pandas", "keras"})
POISONED_MAIN = f"""
import sys
for name in {HEAVY!r}:
    sys.modules[name] = None  # importing it raises ModuleNotFoundError
from tfkfp.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
PIPELINES = tuple(registry.names())  # every pipeline of the suite
# A rendered overlay that admits the suite's image and every step's size.
OVERLAY = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: tfkfp-config}}
data:
  replicaImages: |
    {IMAGE}
---
apiVersion: v1
kind: LimitRange
metadata: {{name: steps}}
spec:
  limits:
  - type: Container
    max: {{cpu: "64", memory: 256Gi}}
"""
CHECK_SETS = ("--set", "input_uri=gs://bucket/new.csv")  # batch_prediction needs data


def tfkfp_without(*args: str, poisoned: str = POISONED_MAIN, cwd=None):
    return subprocess.run([sys.executable, "-c", poisoned, *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_help_imports_nothing_heavy():
    result = tfkfp_without("--help")
    assert result.returncode == 0, result.stderr
    assert "compile" in result.stdout and "submit" in result.stdout


def test_compile_imports_nothing_heavy(tmp_path):
    result = tfkfp_without("compile", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert sorted(p.stem for p in tmp_path.glob("*.yaml")) == sorted(PIPELINES)


def test_check_imports_nothing_heavy(tmp_path):
    assert tfkfp_without("compile", "--out", str(tmp_path)).returncode == 0
    overlay = tmp_path / "cluster.yaml"
    overlay.write_text(OVERLAY)
    compiled = sorted(str(p) for p in tmp_path.glob("*.yaml") if p != overlay)
    result = tfkfp_without("check", *compiled, "--overlay", str(overlay), *CHECK_SETS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK: {len(PIPELINES)} pipeline(s)"), result.stdout


@pytest.fixture
def refusing_host():
    """A loopback port that refuses connections (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_submit_checks_and_compiles_without_anything_heavy(refusing_host):
    """Up to the server: the parameters checked by the steps' own checks, the pipeline
    compiled; then the refused connection is the only error."""
    result = tfkfp_without("submit", "training", "--host", refusing_host,
                           "--set", "input_uri=gs://bucket/data.csv", "--set", "label=label",
                           "--set", "epochs=3", "--set", "quantization=dynamic")
    assert result.returncode == 1
    assert f"could not start 'training' on {refusing_host}" in result.stderr, result.stderr


@pytest.mark.parametrize("name, parameters", [
    ("batch_prediction", ["model_uri=gs://b/model", "input_uri=gs://b/new.csv"]),
    ("edge_export", ["model_uri=gs://b/model", "dataset_uri=gs://b/dataset"]),
    ("serving", ["model_uri=gs://b/model", "dataset_uri=gs://b/dataset"]),
    ("training", ["input_uri=gs://b/data.csv", "label=label", "deploy=kserve"]),
])
def test_every_pipelines_checks_run_without_anything_heavy(name, parameters):
    checks = POISONED_MAIN.replace(
        "from tfkfp.cli.main import main\nsys.exit(main(sys.argv[1:]))",
        "from tfkfp.pipelines import registry\n"
        "print(sorted(registry.parse_parameters(sys.argv[1], sys.argv[2:])))")
    result = tfkfp_without(name, *parameters, poisoned=checks)
    assert result.returncode == 0, result.stderr
    assert all(p.split("=")[0] in result.stdout for p in parameters)


@pytest.mark.parametrize("poison, command, extra", [
    ("numpy", ["demo-data", "DIR"], "local"),
    ("tensorflow", ["shard", "in.csv", "out"], "local"),
    ("tensorflow", ["serve", "model"], "serve"),  # serve's extra brings the runtime too
    ("kserve", ["serve", "model"], "serve"),  # named before the model is looked at
    # the tasks import the runtime in their own processes: named before the run starts
    ("pyarrow", ["run", "training", "--local", "--set", "input_uri=data.csv",
                 "--set", "label=label"], "local"),
])
def test_a_command_without_its_extra_names_the_install_in_one_line(poison, command, extra,
                                                                    tmp_path):
    only = POISONED_MAIN.replace(repr(HEAVY), repr([poison]))
    result = tfkfp_without(*command, poisoned=only, cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (f"tfkfp {command[0]} needs the {extra!r} extra, which this install "
                         f"leaves out (no {poison}): from a tfkfp checkout, "
                         f"pip install '.[{extra}]'"), (
        result.stderr)
    assert "Traceback" not in result.stderr


def test_an_import_error_of_no_extra_is_not_hidden():
    assert extras.missing_extra(ModuleNotFoundError("no yaml", name="yaml"), "compile") is None
    installed = ImportError("cannot import name 'nothing' from 'kfp'", name="kfp")
    assert extras.missing_extra(installed, "compile") is None


def test_from_import_of_a_missing_vertex_module_names_the_vertex_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform_v1", None)
    err = ImportError("cannot import name 'aiplatform_v1' from 'google.cloud' (unknown "
                      "location)", name="google.cloud")
    assert extras.missing_extra(err, "run") == "vertex"


def _run(venv_dir: pathlib.Path, *command: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "VIRTUAL_ENV": str(venv_dir),
           "PATH": f"{venv_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900,
                          **kwargs)


# Run by the fresh environment's Python: its distributions but pip and setuptools (which
# came with the environment), and the bytes of their installed files.
DISTRIBUTIONS = """
import json, os
from importlib import metadata
dists = [d for d in metadata.distributions() if d.metadata["Name"] not in ("pip", "setuptools")]
files = [d.locate_file(f) for d in dists for f in d.files or []]
print(json.dumps({"names": sorted(d.metadata["Name"].lower() for d in dists),
                  "bytes": sum(os.path.getsize(p) for p in files if os.path.isfile(p))}))
"""


@pytest.mark.slow
def test_the_light_install_compiles_and_checks_in_a_fresh_environment(tmp_path):
    """pip install of this checkout without extras (from its source, as a user does from the
    package index); reports the distributions, their size and the install time."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".ci-venv", "build", "*.egg-info", "__pycache__", "tests",
        "benchmarks", "tfkfp-*"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    started = time.perf_counter()
    install = _run(env_dir, python, "-m", "pip", "install", "--quiet", str(source))
    seconds = time.perf_counter() - started
    assert install.returncode == 0, install.stderr
    installed = json.loads(_run(env_dir, python, "-c", DISTRIBUTIONS).stdout)
    print(f"light install: {len(installed['names'])} distributions (tfkfp and its "
          f"dependencies), {installed['bytes'] / 1e6:.0f} MB, {seconds:.0f} s")
    for heavy in ("tensorflow", "numpy", "pyarrow", "pillow", "scikit-learn", "scipy",
                  "kserve", "google-cloud-aiplatform"):
        assert heavy not in installed["names"], f"the light install brought {heavy}"
        assert _run(env_dir, python, "-m", "pip", "show", heavy).returncode != 0
    assert {"tfkfp", "kfp", "kubernetes", "pyyaml"} <= set(installed["names"])

    tfkfp = str(env_dir / "bin" / "tfkfp")
    assert _run(env_dir, tfkfp, "--help").returncode == 0
    out = tmp_path / "compiled"
    compiled = _run(env_dir, tfkfp, "compile", "--out", str(out), cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert sorted(p.stem for p in out.glob("*.yaml")) == sorted(PIPELINES)
    (tmp_path / "cluster.yaml").write_text(OVERLAY)
    checked = _run(env_dir, tfkfp, "check", *map(str, sorted(out.glob("*.yaml"))),
                   "--overlay", str(tmp_path / "cluster.yaml"), *CHECK_SETS)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for command in (["demo-data", "demo"], ["run", "training", "--local", "--set",
                                            "input_uri=data.csv", "--set", "label=label"]):
        refused = _run(env_dir, tfkfp, *command, cwd=tmp_path)
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith(
            "from a tfkfp checkout, pip install '.[local]'"), refused.stderr
