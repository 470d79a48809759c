"""scripts/bump-version.sh: one step bumps the version everywhere it is written."""

import os
import pathlib
import shutil
import subprocess

from tfkfp.components._image import __version__

ROOT = pathlib.Path(__file__).resolve().parents[1]
WRITTEN = ["components/_image.py", "images", "manifests", "scripts/bump-version.sh"]


# third-party pins, which may share the suite's version number (namex==0.1.0)
PINS = ("constraints.txt", "requirements.txt", "requirements-gpu.txt")
# what a local image build recorded (git-ignored): this machine's, not the tree's
LOCAL_RECORDS = shutil.ignore_patterns("built-image*.txt")


def test_the_version_is_bumped_in_every_file_that_names_it(tmp_path):
    for part in WRITTEN:
        source, target = ROOT / part, tmp_path / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=LOCAL_RECORDS)
        else:
            shutil.copy(source, target)
    done = subprocess.run(["bash", str(tmp_path / "scripts/bump-version.sh"), "9.8.7"],
                          capture_output=True, text=True,
                          env={**os.environ, "TFKFP_BUMP_NO_COMPILE": "1"})
    assert done.returncode == 0, done.stderr
    old = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()
           and p.name not in PINS and __version__ in p.read_text(errors="ignore")]
    assert old == [], f"still {__version__}: {old}"
    assert '__version__ = "9.8.7"' in (tmp_path / "components/_image.py").read_text()
    assert "ARG TFKFP_VERSION=9.8.7" in (tmp_path / "images/cpu/Dockerfile").read_text()
    assert "newTag: 9.8.7" in (tmp_path / "manifests/overlays/gke/kustomization.yaml").read_text()
    refused = subprocess.run(["bash", str(tmp_path / "scripts/bump-version.sh"), "next"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "is not a version like 0.2.0" in refused.stderr
