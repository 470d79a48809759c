"""A compiled pipeline retargeted at the user's own image: ``tfkfp compile --image``.

Components name the suite's image (``components/_image.py``) when they are defined, so the
image is changed in the compiled pipeline spec: every executor that runs the CPU image runs
``REGISTRY/NAME:TAG`` instead, and one that runs the GPU image runs ``REGISTRY/NAME:TAG-gpu``
(build and push both from this checkout: scripts/build-image.sh). Every step also gets
``TFKFP_IMAGE``, so train's cluster launchers give their replicas the same image.

An image named by digest (``REPO@sha256:...`` or ``REPO:TAG@sha256:...``) is kept exactly as
given: a tag can be pushed again, a digest cannot. A digest names one image, so it cannot
name a GPU variant: a pipeline with GPU steps needs a tag. ``--image auto`` takes the digest
that scripts/build-image.sh wrote after its last build (``images/built-image.txt``).
"""

import pathlib
import re
from typing import Any, Dict

import yaml

from tfkfp.components._image import GPU_IMAGE, IMAGE, IMAGE_ENV
from tfkfp.components.common.platform import uris

# [registry[:port]/]path, as docker names a repository
_REPOSITORY = r"[a-z0-9][a-z0-9._-]*(:[0-9]+)?(/[a-z0-9._-]+)*"
_TAG = r":[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"@sha256:[0-9a-f]{64}"
_TAGGED = re.compile(f"^{_REPOSITORY}{_TAG}$")
_PINNED = re.compile(f"^{_REPOSITORY}({_TAG})?{_DIGEST}$")
EXPECTED = ("expected REGISTRY/NAME:TAG, REGISTRY/NAME@sha256:DIGEST or "
            "REGISTRY/NAME:TAG@sha256:DIGEST (64 hex digits), e.g. "
            "europe-docker.pkg.dev/my-project/ml/tfkfp:0.1.0, or auto")
AUTO = "auto"
# Written by scripts/build-image.sh (gitignored): what its last CPU build was
BUILT = pathlib.Path(__file__).resolve().parents[1] / "images" / "built-image.txt"


def check_image(image: str) -> str:
    """``image`` when it is a tag or a digest reference; ValueError naming the forms."""
    if not (_TAGGED.match(image) or _PINNED.match(image)):
        raise ValueError(f"--image {image!r}: {EXPECTED}")
    return image


def is_pinned(image: str) -> bool:
    """Whether ``image`` names its content by digest."""
    return bool(_PINNED.match(image))


def resolve_image(image: str, built: pathlib.Path | None = None) -> str:
    """``image`` checked; ``auto`` replaced by the digest scripts/build-image.sh recorded
    (in ``built``, default ``BUILT``)."""
    if image != AUTO:
        return check_image(image)
    built = built or BUILT
    if not built.is_file():
        raise ValueError(f"--image auto: {built} does not exist: no build has recorded an "
                         "image. Run scripts/build-image.sh (with PUSH=REGISTRY/NAME to push "
                         "it and record its digest), or name the image with --image")
    fields = built.read_text(encoding="utf-8").split()
    if len(fields) == 1 and is_pinned(fields[0]):
        return fields[0]
    if len(fields) == 2:  # a local build: its tag and image ID, which no registry serves
        raise ValueError(f"--image auto: {built} records a local build ({fields[0]}, image "
                         f"ID {fields[1]}), which no registry holds by digest: push it "
                         "(PUSH=REGISTRY/NAME scripts/build-image.sh), or name the image "
                         "with --image (a kind cluster that loaded it: --image "
                         f"{fields[0]})")
    raise ValueError(f"--image auto: {built} holds {' '.join(fields)[:200]!r}; expected one "
                     "REGISTRY/NAME@sha256:DIGEST line (scripts/build-image.sh writes it)")


def gpu_variant(image: str) -> str:
    """The GPU image beside a tagged ``image``: ``TAG-gpu``; refused for a digest."""
    if is_pinned(check_image(image)):
        raise ValueError(f"--image {image!r} names one image by digest, which cannot name "
                         "its GPU variant (TAG-gpu) that this pipeline's GPU steps run: use "
                         "--image REGISTRY/NAME:TAG, or compile without --gpus")
    return f"{image}-gpu"


def retarget(path: str, image: str) -> str:
    """Rewrite the compiled pipeline at ``path`` to run ``image``; returns path."""
    check_image(image)
    documents = list(yaml.safe_load_all(uris.read_text(path)))
    for document in documents:
        for executor in _executors(document).values():
            container = executor.get("container")
            if container is None:  # importers have no container
                continue
            container["image"] = _replacement(container["image"], image)
            env = [e for e in container.get("env", []) if e.get("name") != IMAGE_ENV]
            container["env"] = [*env, {"name": IMAGE_ENV, "value": container["image"]}]
    uris.write_text_atomic(path, yaml.safe_dump_all(documents, sort_keys=False))
    return path


def _replacement(current: str, image: str) -> str:
    if current == IMAGE:
        return image
    return gpu_variant(image) if current == GPU_IMAGE else current


def _executors(document: Dict[str, Any]) -> Dict[str, Any]:
    return (document or {}).get("deploymentSpec", {}).get("executors", {})
