"""Cluster tools for the image and manifest tests: found in the active virtual environment or
on PATH.

A missing tool skips its tests with the reason, or fails them when TFKFP_REQUIRE_CLUSTER_TOOLS=1
(CI sets it, after .ci/install-cluster-tools installed them).
"""

import os
import pathlib
import shutil
import subprocess
import sys
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
K8S_CACHE = pathlib.Path(os.environ.get("TFKFP_K8S_CACHE",
                                        pathlib.Path.home() / ".cache" / "tfkfp-k8s"))


def missing(reason: str) -> None:
    """Skip (a developer's machine) or fail (CI) for a missing tool."""
    if os.environ.get("TFKFP_REQUIRE_CLUSTER_TOOLS") == "1":
        pytest.fail(f"{reason}; TFKFP_REQUIRE_CLUSTER_TOOLS=1 forbids skipping "
                    "(run .ci/install-cluster-tools)", pytrace=False)
    pytest.skip(f"{reason} (install with .ci/install-cluster-tools)")


def tool(name: str) -> str:
    """The path of a command, from the venv's bin folder first, then PATH."""
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    path = shutil.which(name, path=search)
    if not path:
        missing(f"`{name}` is not installed")
    return path


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """Run a command, capture its output, and fail the test with it when it fails."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if result.returncode:
        pytest.fail(f"{' '.join(map(str, args))} exited {result.returncode}:\n"
                    f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}", pytrace=False)
    return result


def namespace() -> types.SimpleNamespace:
    """``tool(name)``, ``run(args)``, ``missing(reason)`` and the paths, for a fixture."""
    return types.SimpleNamespace(tool=tool, run=run, missing=missing, root=ROOT, cache=K8S_CACHE)
