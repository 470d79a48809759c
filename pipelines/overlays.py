"""What a rendered overlay of manifests/ says about the namespace tfkfp's steps run in, for
``tfkfp check`` (pipelines/lint.py): its ``tfkfp-config`` allow-list, LimitRanges and
ResourceQuotas. The overlay is kustomize's output (``kustomize build manifests/overlays/kind >
cluster.yaml``), one multi-document file or a folder of rendered files: reading it needs no
kustomize."""

import dataclasses
import os
from typing import Any, Dict, Iterator, List, Tuple

import yaml

# The allow-list's ConfigMap and keys (components/train/launchers/kube.py reads them).
ALLOWLIST, IMAGES, ACCOUNTS = "tfkfp-config", "replicaImages", "replicaServiceAccounts"


class OverlayError(ValueError):
    """An overlay that cannot be read: the message names the path and what to give."""


@dataclasses.dataclass(frozen=True)
class Cluster:
    """What an overlay says about the namespace the steps run in."""

    source: str
    images: List[str] | None  # tfkfp-config's replicaImages; None: no tfkfp-config
    accounts: List[str] | None  # tfkfp-config's replicaServiceAccounts
    limits: List[Dict[str, Any]]  # LimitRange spec.limits entries of type Container or Pod
    quotas: List[Tuple[str, Dict[str, str]]]  # (ResourceQuota name, spec.hard)


def read_overlay(path: str) -> Cluster:
    """The cluster of a rendered overlay: one multi-document YAML file, or a folder of them."""
    documents = [d for text in _overlay_texts(path) for d in yaml.safe_load_all(text)
                 if isinstance(d, dict)]
    config = [d for d in documents if d.get("kind") == "ConfigMap"
              and d.get("metadata", {}).get("name") == ALLOWLIST]
    data = (config[0].get("data") or {}) if config else None
    limits = [item for d in documents if d.get("kind") == "LimitRange"
              for item in d.get("spec", {}).get("limits", [])
              if item.get("type") in ("Container", "Pod")]
    quotas = [(d.get("metadata", {}).get("name", "?"), d.get("spec", {}).get("hard", {}))
              for d in documents if d.get("kind") == "ResourceQuota"]
    return Cluster(path, _lines(data, IMAGES), _lines(data, ACCOUNTS), limits, quotas)


def _overlay_texts(path: str) -> Iterator[str]:
    if os.path.isfile(path):
        with open(path) as f:
            yield f.read()
        return
    if not os.path.isdir(path):
        raise OverlayError(f"--overlay {path}: no such file or folder; give the rendered "
                           "overlay, e.g. kustomize build manifests/overlays/kind > cluster.yaml")
    if os.path.exists(os.path.join(path, "kustomization.yaml")):
        raise OverlayError(f"--overlay {path} is a kustomize overlay, not rendered YAML: "
                           f"render it first (kustomize build {path} > cluster.yaml, or "
                           f"kubectl kustomize {path} > cluster.yaml) and check against that")
    names = sorted(n for n in os.listdir(path) if n.endswith((".yaml", ".yml")))
    if not names:
        raise OverlayError(f"--overlay {path} holds no .yaml files")
    for name in names:
        with open(os.path.join(path, name)) as f:
            yield f.read()


def _lines(data: Dict[str, str] | None, key: str) -> List[str] | None:
    if data is None:
        return None
    return [line.strip() for line in (data.get(key) or "").splitlines() if line.strip()]
