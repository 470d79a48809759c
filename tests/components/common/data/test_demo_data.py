"""The demo data ships with the package: the same 1,797 digits scikit-learn's 8x8 digits
were, read without scikit-learn."""

import csv
import hashlib
import os
import sys

import numpy as np
from PIL import Image

from tfkfp.components.common.data.demo_data import IMAGES_NAME, write_demo_data

# sha256 of digits.csv as write_demo_data wrote it from sklearn.datasets.load_digits()
# (scikit-learn 1.9.1), before the data moved into this package.
CSV_SHA256 = "f912dc0bd0cf1d2b37dee7674ea458eadcdc5a8aef280c8444b83860d8d63d25"


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_the_csv_holds_exactly_the_rows_scikit_learn_gave(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it now raises
    data = write_demo_data(str(tmp_path))
    assert data.rows == 1797
    assert _sha256(data.csv) == CSV_SHA256, f"{data.csv} differs from the earlier demo data"


def test_every_png_is_its_csv_row_scaled_to_0_255(tmp_path):
    data = write_demo_data(str(tmp_path))
    with open(data.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    folders = sorted(os.listdir(os.path.join(str(tmp_path), IMAGES_NAME)))
    assert folders == [str(d) for d in range(10)]
    for row in rows[:: 97]:  # a spread of rows over every label
        index, label = int(row["id"]), row["label"]
        pixels = np.array([int(row[f"pixel_{i}"]) for i in range(64)]).reshape(8, 8)
        png = os.path.join(data.images, label, f"{index:04d}.png")
        decoded = np.asarray(Image.open(png))
        np.testing.assert_array_equal(decoded, np.round(pixels * (255.0 / 16.0)), err_msg=png)
    written = sum(len(files) for _, _, files in os.walk(data.images))
    assert written == len(rows) == data.rows
