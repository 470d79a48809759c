"""The example InferenceService beside each overlay: what deploy_model writes for the options
it lists, admitted by the overlay's LimitRange, run as the overlay's serving account, and
accepted by a real API server with the InferenceService resource registered."""

import os
import subprocess

import pytest
import upstream_schemas
from cluster_tools import tool
from inferenceservice_examples import EXAMPLES, FILE, ROOT, example, text
from kube_controller import cluster


def quantity(value: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for unit, factor in units.items():
        if value.endswith(unit):
            return float(value[:-len(unit)]) * factor
    return float(value)


@pytest.mark.parametrize("overlay", sorted(EXAMPLES))
def test_each_example_is_what_deploy_model_writes(overlay):
    path = ROOT / "manifests" / "overlays" / overlay / FILE
    assert path.read_text() == text(overlay), (
        f"{path} is stale: run python tests/inferenceservice_examples.py")


@pytest.mark.parametrize("overlay", sorted(EXAMPLES))
def test_each_example_fits_its_overlay(overlay, rendered):
    _, docs = rendered[overlay]
    service = example(overlay)
    namespaces = {d["metadata"].get("namespace") for d in docs if d["kind"] == "LimitRange"}
    assert namespaces == {service["metadata"]["namespace"]}
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    predictor = service["spec"]["predictor"]
    assert predictor["serviceAccountName"] in accounts
    (limit_range,) = [d for d in docs if d["kind"] == "LimitRange"]
    (container_limits,) = [item for item in limit_range["spec"]["limits"]
                           if item["type"] == "Container"]
    holder = predictor.get("model") or predictor["containers"][0]
    for resource, value in holder["resources"]["limits"].items():
        assert quantity(value) <= quantity(str(container_limits["max"][resource])), (
            f"{overlay}: {resource} {value} is above the LimitRange's max")
        assert holder["resources"]["requests"][resource] == value


def test_the_api_server_accepts_every_example(tmp_path):
    crds = upstream_schemas.write([upstream_schemas.INFERENCESERVICE], tmp_path / "crds")
    with cluster(tmp_path, "tfkfp", crds) as kubeconfig:
        kubectl = [tool("kubectl"), "--kubeconfig", kubeconfig]
        subprocess.run([*kubectl, "create", "namespace", "kubeflow"], check=True,
                       capture_output=True)
        for overlay in sorted(EXAMPLES):
            path = os.path.join(ROOT, "manifests", "overlays", overlay, FILE)
            done = subprocess.run([*kubectl, "create", "--dry-run=server", "-f", path],
                                  capture_output=True, text=True)
            assert done.returncode == 0, f"{overlay}: {done.stderr}"
            assert "created (server dry run)" in done.stdout
