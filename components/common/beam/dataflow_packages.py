"""The suite for Dataflow's workers when no worker image is given: its wheel (Beam's
``--extra_package``) and a requirements file pinning what the workers need to the versions
the launcher runs (``--requirements_file``). An image (images/beam-worker) is the better
route for TensorFlow-sized dependencies: the workers then install nothing at start-up.
"""

import importlib.util
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from typing import List, Sequence

from tfkfp.components.common.beam.dataflow_errors import DataflowError

log = logging.getLogger("tfkfp")

WHEEL_ENV = "TFKFP_WHEEL"  # the path of a suite wheel built beforehand
DIST = "tfkfp"
# The extras whose packages the workers import (the model handler's TensorFlow, NumPy, ...);
# one the installed suite does not declare is skipped.
WORKER_EXTRAS = ("local", "beam")
# The worker's SDK image brings its own Beam, at the launcher's version (Dataflow picks the
# image from the launcher's Beam and Python): pinning it again could only disagree.
SDK_PROVIDED = frozenset({"apache-beam"})
WHEEL_BUILD_SECONDS = 600
# What a wheel is built from (as scripts/build-image.sh sends the image build).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "components", "pipelines",
           "cli")
SKIPPED = ("__pycache__", "*.pyc", "*.egg-info", "build")


def suite_wheel(folder: str = "") -> str:
    """The path of the suite's wheel for the workers, found or built in this order:

    1. ``TFKFP_WHEEL``: a wheel built beforehand (``pip wheel --no-deps .`` in a checkout),
       for a launcher whose suite was installed from a wheel or an image;
    2. built from the checkout this suite was imported from (an editable or source install,
       with ``pyproject.toml`` above ``components/``) with ``pip wheel --no-deps`` into
       ``folder`` (default: a new temporary folder);
    3. otherwise DataflowError: an installed suite has no sources to build from.
    """
    given = os.environ.get(WHEEL_ENV, "")
    if given:
        if not (given.endswith(".whl") and os.path.isfile(given)):
            raise DataflowError(f"{WHEEL_ENV}={given!r} is not a wheel file; expected the "
                                "path of a tfkfp-*.whl (pip wheel --no-deps <checkout>)")
        return given
    root = source_root()
    if root is None:
        raise DataflowError(
            f"the suite's wheel for Dataflow's workers: this tfkfp is installed without its "
            f"sources, so none can be built; set {WHEEL_ENV} to a tfkfp wheel, or give "
            "beam_options sdk_container_image (images/beam-worker)")
    return _build_wheel(root, folder or tempfile.mkdtemp(prefix="tfkfp-dataflow-"))


def source_root() -> pathlib.Path | None:
    """The checkout this suite runs from, or None for an installed suite."""
    import tfkfp.components

    root = pathlib.Path(tfkfp.components.__file__).resolve().parent.parent
    project = root / "pyproject.toml"
    if project.is_file() and f'name = "{DIST}"' in project.read_text():
        return root
    return None


def _build_wheel(root: pathlib.Path, folder: str) -> str:
    # From a clean copy: setuptools' build/ folder in a checkout keeps files deleted since
    # the last build and would ship them to the workers.
    with tempfile.TemporaryDirectory(prefix="tfkfp-sources-") as copy:
        for name in SOURCES:
            source, target = root / name, pathlib.Path(copy) / name
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns(*SKIPPED))
            else:
                shutil.copy2(source, target)
        # Without build isolation when setuptools is here: no index needed to build.
        isolation = [] if importlib.util.find_spec("setuptools") is None else \
            ["--no-build-isolation"]
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                   "-w", folder, copy]
        log.info("building the suite's wheel for Dataflow's workers from %s", root)
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=WHEEL_BUILD_SECONDS)
    wheels = sorted(pathlib.Path(folder).glob(f"{DIST}-*.whl"))
    if done.returncode or not wheels:
        raise DataflowError(f"building the suite's wheel from {root} failed (exit "
                            f"{done.returncode}): {done.stderr.strip()[-1500:]}; set "
                            f"{WHEEL_ENV} to a wheel built beforehand")
    return str(wheels[-1])


def worker_requirements(extras: Sequence[str] = WORKER_EXTRAS) -> List[str]:
    """``name==version`` lines: the suite's own requirements and those of ``extras`` at the
    versions installed here, less the SDK's Beam. A needed package that is not installed
    is refused: the workers would get whatever version the index offers."""
    dist = metadata.distribution(DIST)
    declared = set(dist.metadata.get_all("Provides-Extra") or [])
    chosen = [e for e in extras if e in declared]
    lines, missing = {}, []
    for text in dist.requires or []:
        name = _needed(text, chosen)
        if name is None or name in SDK_PROVIDED or name == DIST:
            continue
        try:
            lines[name] = f"{name}=={metadata.version(name)}"
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise DataflowError(f"Dataflow workers need {sorted(missing)}, which are not "
                            f"installed here to pin; install tfkfp[{','.join(chosen)}] "
                            "or give beam_options sdk_container_image")
    return sorted(lines.values())


def _needed(text: str, extras: Sequence[str]) -> str | None:
    """The canonical name of a Requires-Dist entry the workers need, else None."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    requirement = Requirement(text)
    marker = requirement.marker
    if marker is None or marker.evaluate({"extra": ""}):
        return canonicalize_name(requirement.name)  # the suite's own requirement
    if any(marker.evaluate({"extra": extra}) for extra in extras):
        return canonicalize_name(requirement.name)
    return None


def write_worker_requirements(folder: str) -> str:
    """Write ``worker_requirements()`` to ``folder/requirements.txt``; its path."""
    path = os.path.join(folder, "requirements.txt")
    with open(path, "w") as f:
        f.write("# Pinned by tfkfp for Dataflow's workers from the launcher's installed "
                "versions.\n")
        f.write("\n".join(worker_requirements()) + "\n")
    return path
