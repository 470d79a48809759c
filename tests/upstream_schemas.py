"""The CustomResourceDefinitions of the APIs tfkfp writes to, as their projects publish them
(tests/upstream_crds: each file names its repository, release tag and path), ready for the
1.20 API server of tests/kube_apiserver.py.

Their schemas list every field, so the API server refuses a wrong type or value and prunes a
field the resource does not have: a test that reads an object back sees what was lost."""

import gzip
import json
import pathlib
from typing import Any, Dict, Iterable

import yaml

FOLDER = pathlib.Path(__file__).resolve().parent / "upstream_crds"
INFERENCESERVICE = "inferenceservices.serving.kserve.io"
TRAINJOB = "trainjobs.trainer.kubeflow.org"
CLUSTER_TRAINING_RUNTIME = "clustertrainingruntimes.trainer.kubeflow.org"
JOBSET = "jobsets.jobset.x-k8s.io"
TFJOB = "tfjobs.kubeflow.org"
TRAINER = (TRAINJOB, CLUSTER_TRAINING_RUNTIME, JOBSET)  # what installing Trainer v2 registers
# CEL validation rules (Kubernetes 1.23+): the 1.20 API server's schema type has no such
# field, and kubectl refuses a CRD carrying one.
CEL_RULES = "x-kubernetes-validations"


def definition(name: str) -> Dict[str, Any]:
    """The CRD ``name`` (e.g. ``tfjobs.kubeflow.org``) as published upstream."""
    path = FOLDER / f"{name}.yaml.gz"
    if not path.exists():
        known = sorted(p.name[:-len(".yaml.gz")] for p in FOLDER.glob("*.yaml.gz"))
        raise FileNotFoundError(f"no upstream CRD {name!r} in {FOLDER}; vendored: "
                                f"{', '.join(known)}")
    # libyaml's loader where PyYAML has it: the pure-Python one takes seconds per CRD.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with gzip.open(path, "rt") as f:
        (crd,) = [doc for doc in yaml.load_all(f, Loader=loader) if doc]
    return crd


def for_kubernetes_1_20(crd: Dict[str, Any]) -> Dict[str, Any]:
    """The CRD without what the 1.20 API server cannot take: CEL rules, and empty-string
    defaults (e.g. of a secretKeyRef's ``name``), which it reads as null and refuses. A key
    of a map-typed list that loses its default becomes required instead, as 1.20 demands of
    list-map keys (e.g. ``imagePullSecrets[].name``): stricter than upstream, never looser.
    Every field, type, enum, pattern and other default stays, so pruning and validation are
    upstream's."""
    def strip(node):
        if isinstance(node, list):
            return [strip(v) for v in node]
        if not isinstance(node, dict):
            return node
        kept = {k: strip(v) for k, v in node.items()
                if k != CEL_RULES and not (k == "default" and v == "")}
        if node.get("x-kubernetes-list-type") == "map":
            _require_keys_without_default(node, kept["items"])
        return kept

    return strip(crd)


def _require_keys_without_default(list_schema: Dict[str, Any], item: Dict[str, Any]) -> None:
    """Make ``item`` (the stripped item schema) require each list-map key whose upstream
    default was the empty string."""
    for key in list_schema.get("x-kubernetes-list-map-keys", []):
        upstream = list_schema["items"]["properties"][key]
        if upstream.get("default") == "" and key not in item.get("required", []):
            item["required"] = [*item.get("required", []), key]


def write(names: Iterable[str], folder: pathlib.Path) -> list:
    """Write each CRD, ready for 1.20, as a file in ``folder``; their paths, for
    ``kube_controller.cluster``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(for_kubernetes_1_20(definition(name))))
        paths.append(str(path))
    return paths
