"""The built-in demo data: 1,797 handwritten 8x8 digits (the UCI "Optical Recognition of
Handwritten Digits" test set, CC BY 4.0; see README.md beside this module).

The data ships inside this package (``digits.csv.gz``), so nothing is downloaded. It is
written as a CSV (``id``, ``pixel_0`` .. ``pixel_63`` with values 0-16, ``label``) and as an
image folder (one subfolder per digit, 8x8 grayscale PNGs scaled to 0-255).
"""

import dataclasses
import gzip
import importlib.resources
import os

import numpy as np

CSV_NAME = "digits.csv"
IMAGES_NAME = "digits_images"
# 64 pixels then the label per line, no header: the file scikit-learn ships as its digits
PACKAGED_DIGITS = "digits.csv.gz"


@dataclasses.dataclass(frozen=True)
class DemoData:
    csv: str
    images: str
    rows: int


def load_digits():
    """The packaged digits: images (N, 8, 8) and labels (N,), both int64."""
    source = importlib.resources.files(__package__).joinpath(PACKAGED_DIGITS)
    with source.open("rb") as raw, gzip.open(raw, "rt") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.int64, ndmin=2)
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1]


def write_demo_data(directory: str) -> DemoData:
    """Write the digits as CSV and as a PNG folder under directory (atomically per file)."""
    images, labels = load_digits()
    os.makedirs(directory, exist_ok=True)
    csv_path = os.path.join(directory, CSV_NAME)
    _write_csv(csv_path, images.reshape(len(images), -1), labels)
    image_dir = os.path.join(directory, IMAGES_NAME)
    _write_pngs(image_dir, images, labels)
    return DemoData(csv_path, image_dir, len(labels))


def _write_csv(path: str, pixels: np.ndarray, labels: np.ndarray) -> None:
    header = ",".join(["id"] + [f"pixel_{i}" for i in range(pixels.shape[1])] + ["label"])
    table = np.column_stack([np.arange(len(labels)), pixels, labels])
    tmp = path + ".tmp"
    np.savetxt(tmp, table, fmt="%d", delimiter=",", header=header, comments="")
    os.replace(tmp, path)


def _write_pngs(directory: str, images: np.ndarray, labels: np.ndarray) -> None:
    from PIL import Image

    for digit in range(10):
        os.makedirs(os.path.join(directory, str(digit)), exist_ok=True)
    scaled = np.round(images * (255.0 / 16.0)).astype(np.uint8)
    for index, (pixels, label) in enumerate(zip(scaled, labels)):
        path = os.path.join(directory, str(label), f"{index:04d}.png")
        tmp = path + ".tmp"
        Image.fromarray(pixels, mode="L").save(tmp, format="PNG")
        os.replace(tmp, path)
