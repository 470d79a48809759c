"""Pages drawn by a real browser: Debian's headless Chromium takes a screenshot of a page
file, and the tests read its pixels. Without /usr/bin/chromium the tests that need it skip,
naming the install that brings it (.ci/run does it on CI)."""

import os
import pathlib
import subprocess
import tempfile

import numpy as np
import pytest

CHROMIUM = os.environ.get("TFKFP_CHROMIUM", "/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")


def require_chromium() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        message = (f"SKIPPED LOUDLY: no browser at {CHROMIUM}; the chart pages are not "
                   "rendered. Install it with: apt-get install -y chromium")
        print(message)
        pytest.skip(message)
    return CHROMIUM


def screenshot(page: pathlib.Path, out: pathlib.Path, width: int = 1200,
               height: int = 2400) -> np.ndarray:
    """The page as Chromium draws it: an RGB array of ``height`` x ``width``."""
    from PIL import Image

    browser = require_chromium()
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}",
                        f"--screenshot={out}", f"--window-size={width},{height}",
                        page.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    return np.asarray(Image.open(out).convert("RGB"))


def drawn(pixels: np.ndarray) -> int:
    """Pixels that are not the white background."""
    return int(np.sum(np.any(pixels < 245, axis=2)))


def coloured(pixels: np.ndarray) -> int:
    """Pixels of a colour, not grey: lines, markers, heatmap cells (text is black)."""
    return int(np.sum(np.ptp(pixels.astype(int), axis=2) > 80))
