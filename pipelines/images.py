"""A compiled pipeline retargeted at the user's own image: ``tfkfp compile --image``.

Components name the suite's image (``components/_image.py``) when they are defined, so the
image is changed in the compiled pipeline spec: every executor that runs the CPU image runs
``REGISTRY/NAME:TAG`` instead, and one that runs the GPU image runs ``REGISTRY/NAME:TAG-gpu``
(build and push both from this checkout: scripts/build-image.sh). Every step also gets
``TFKFP_IMAGE``, so train's cluster launchers give their replicas the same image.
"""

import re
from typing import Any, Dict

import yaml

from tfkfp.components._image import GPU_IMAGE, IMAGE, IMAGE_ENV
from tfkfp.components.common.platform import uris

# [registry[:port]/]path:tag, as docker tags it; a digest cannot name its GPU variant.
_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._-]*(:[0-9]+)?(/[a-z0-9._-]+)*"
                        r":[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def check_image(image: str) -> str:
    if not _REFERENCE.match(image) or "@" in image:
        raise ValueError(f"--image {image!r}: expected REGISTRY/NAME:TAG, e.g. "
                         "europe-docker.pkg.dev/my-project/ml/tfkfp:0.1.0 (a tag, not a "
                         "digest: the GPU steps run TAG-gpu)")
    return image


def gpu_variant(image: str) -> str:
    return f"{check_image(image)}-gpu"


def retarget(path: str, image: str) -> str:
    """Rewrite the compiled pipeline at ``path`` to run ``image``; returns path."""
    check_image(image)
    documents = list(yaml.safe_load_all(uris.read_text(path)))
    for document in documents:
        for executor in _executors(document).values():
            container = executor.get("container")
            if container is None:  # importers have no container
                continue
            container["image"] = {IMAGE: image, GPU_IMAGE: gpu_variant(image)}.get(
                container["image"], container["image"])
            env = [e for e in container.get("env", []) if e.get("name") != IMAGE_ENV]
            container["env"] = [*env, {"name": IMAGE_ENV, "value": container["image"]}]
    uris.write_text_atomic(path, yaml.safe_dump_all(documents, sort_keys=False))
    return path


def _executors(document: Dict[str, Any]) -> Dict[str, Any]:
    return (document or {}).get("deploymentSpec", {}).get("executors", {})
