"""Cluster tools for the manifest tests: found in the active virtual environment or on PATH.

A missing tool skips its tests with the reason, or fails them when TFKFP_REQUIRE_CLUSTER_TOOLS=1
(CI sets it, after .ci/install-cluster-tools installed them).
"""

import pytest
from cluster_tools import ROOT, run, tool

OVERLAYS = ("gke", "onprem", "kind")


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """Each overlay rendered by `kubectl kustomize`: {overlay: (path, [documents])}."""
    import yaml

    kubectl = tool("kubectl")
    out = tmp_path_factory.mktemp("rendered")
    result = {}
    for overlay in OVERLAYS:
        text = run([kubectl, "kustomize", ROOT / "manifests" / "overlays" / overlay]).stdout
        path = out / f"{overlay}.yaml"
        path.write_text(text)
        result[overlay] = (path, [d for d in yaml.safe_load_all(text) if d])
    return result


@pytest.fixture(scope="session")
def runtime(tmp_path_factory):
    """manifests/trainer rendered by `kubectl kustomize`: (path, [documents])."""
    import yaml

    text = run([tool("kubectl"), "kustomize", ROOT / "manifests" / "trainer"]).stdout
    path = tmp_path_factory.mktemp("runtime") / "trainer.yaml"
    path.write_text(text)
    return path, [d for d in yaml.safe_load_all(text) if d]
