"""The built-in demo data: scikit-learn's bundled 8x8 handwritten digits (1,797 images).

The dataset ships inside the scikit-learn package, so nothing is downloaded. It is written
as a CSV (``id``, ``pixel_0`` .. ``pixel_63`` with values 0-16, ``label``) and as an image
folder (one subfolder per digit, 8x8 grayscale PNGs scaled to 0-255).
"""

import dataclasses
import os

import numpy as np

CSV_NAME = "digits.csv"
IMAGES_NAME = "digits_images"


@dataclasses.dataclass(frozen=True)
class DemoData:
    csv: str
    images: str
    rows: int


def load_digits():
    from sklearn.datasets import load_digits as _load

    bunch = _load()
    return bunch.images.astype(np.int64), bunch.target.astype(np.int64)


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
