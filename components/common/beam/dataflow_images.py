"""The workers' image against the launcher: Dataflow's workers unpickle the launcher's
pipeline, so they must run its Python (major.minor) and exactly its Beam, or the job fails
minutes later on every worker. An image's name tells its versions in one of two ways:

- Beam's own SDK images: ``[REGISTRY/]apache/beam_python3.11_sdk:2.77.0``;
- the suite's worker image (images/beam-worker/Dockerfile), tagged
  ``<suite version>-py<python>-beam<beam>``, e.g.
  ``REGISTRY/tfkfp/tfkfp-beam-worker:0.1.0-py3.11-beam2.77.0`` (``worker_image_tag()``).

An image named otherwise (or by digest only) is launched with a warning: it cannot be
checked before the launch.
"""

import logging
import re
import sys
from importlib import metadata
from typing import Dict, Tuple

from tfkfp.components._image import IMAGE_NAME, __version__
from tfkfp.components.common.beam.dataflow_errors import DataflowError

log = logging.getLogger("tfkfp")

WORKER_IMAGE_NAME = f"{IMAGE_NAME}-beam-worker"
_BEAM_REPOSITORY = re.compile(r"(?:^|/)beam_python(?P<python>\d+\.\d+)_sdk$")
_BEAM_TAG = re.compile(r"(?P<beam>\d+\.\d+\.\d+\S*)")
_SUITE_TAG = re.compile(r"(?P<suite>.+?)-py(?P<python>\d+\.\d+)-beam(?P<beam>\d+\.\d+\.\d+\S*)")


def launcher_versions() -> Tuple[str, str]:
    """This launcher's Python (major.minor) and Beam version."""
    try:
        beam = metadata.version("apache-beam")
    except metadata.PackageNotFoundError:
        raise DataflowError("apache-beam is not installed where the Dataflow job is "
                            "launched; install the beam extra") from None
    return f"{sys.version_info.major}.{sys.version_info.minor}", beam


def worker_image_tag() -> str:
    """The tag of the suite's worker image that fits this launcher, e.g.
    ``0.1.0-py3.11-beam2.77.0``."""
    python, beam = launcher_versions()
    return f"{__version__}-py{python}-beam{beam}"


def image_versions(image: str) -> Dict[str, str]:
    """What the image's name tells: some of ``python``, ``beam``, ``suite``."""
    repository, tag = _split(image)
    suite = _SUITE_TAG.fullmatch(tag)
    if suite:
        return suite.groupdict()
    told = {}
    named = _BEAM_REPOSITORY.search(repository)
    if named:
        told["python"] = named.group("python")
        version = _BEAM_TAG.fullmatch(tag)
        if version:
            told["beam"] = version.group("beam")
    return told


def _split(image: str) -> Tuple[str, str]:
    """(repository, tag) of an image reference; a digest is dropped, an absent tag is ''."""
    name = image.split("@", 1)[0]
    repository, sep, tag = name.rpartition(":")
    if not sep or "/" in tag:  # no tag, or the colon was a registry's port
        return name, ""
    return repository, tag


def check_worker_image(image: str) -> None:
    """Refuse a worker image whose name tells a Python or Beam other than the launcher's
    (DataflowError naming both); warn when the name does not tell."""
    from packaging.version import InvalidVersion, Version

    told = image_versions(image)
    python, beam = launcher_versions()
    wrong = []
    if told.get("python", python) != python:
        wrong.append(f"Python {told['python']} in the image, {python} here")
    if "beam" in told:
        try:
            same = Version(told["beam"]) == Version(beam)
        except InvalidVersion:
            same = told["beam"] == beam
        if not same:
            wrong.append(f"Beam {told['beam']} in the image, {beam} here")
    if wrong:
        raise DataflowError(
            f"beam_options sdk_container_image {image!r}: {'; '.join(wrong)}. Dataflow's "
            f"workers must run the launcher's Python and Beam: use apache/beam_python"
            f"{python}_sdk:{beam} or the suite's worker image tagged "
            f"...:{worker_image_tag()} (images/beam-worker)")
    untold = [k for k in ("python", "beam") if k not in told]
    if untold:
        log.warning("sdk_container_image %s does not tell its %s in its name, so it is not "
                    "checked before the launch; the workers need Python %s and Beam %s "
                    "(tag the suite's worker image %s)", image, " and ".join(untold),
                    python, beam, worker_image_tag())
    if told.get("suite", __version__) != __version__:
        log.warning("sdk_container_image %s holds tfkfp %s; this launcher runs %s", image,
                    told["suite"], __version__)
