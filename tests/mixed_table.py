"""A table with float columns holding gaps, whole-number columns and a string column,
interleaved (``f_a, n_a, colour, f_b, n_b, f_c``), and the model train builds on it (each
float imputed then normalised, each whole number cast then normalised, the string one-hot),
built once per test session: for the packed-input tests of export_tflite, batch_predict and
serve."""

import csv
import dataclasses
import os

import numpy as np
import pytest

COLOURS = ["red", "green", "blue"]
FEATURES = ["f_a", "n_a", "colour", "f_b", "n_b", "f_c"]
_CACHE = {}


@dataclasses.dataclass(frozen=True)
class MixedTable:
    dataset: str
    model: str


@pytest.fixture(scope="session")
def mixed_table(tmp_path_factory) -> MixedTable:
    if "table" not in _CACHE:
        base = tmp_path_factory.mktemp("mixed_table")
        dataset = _dataset(str(base))
        _CACHE["table"] = MixedTable(dataset, _train(dataset, str(base / "model")))
    return _CACHE["table"]


def _rows(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        f_a, f_b, f_c = rng.normal(50.0, 20.0), rng.normal(0.05, 0.01), rng.normal()
        n_a, n_b = int(rng.integers(0, 1000)), int(rng.integers(-5, 5))
        colour = COLOURS[int(rng.integers(len(COLOURS)))]
        score = (f_a - 50) / 20 + (f_b - 0.05) / 0.01 + (n_a - 500) / 300 + n_b / 3 \
            + (colour == "red") - (colour == "blue")
        gap_a, gap_b = rng.random() < 0.1, rng.random() < 0.1  # a gap: an empty cell
        yield [i, "" if gap_a else round(f_a, 3), n_a, colour, "" if gap_b else round(f_b, 5),
               n_b, round(f_c, 3), "high" if score > 0 else "low"]


def _dataset(base: str) -> str:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    path = os.path.join(base, "mixed.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", *FEATURES, "label"])
        writer.writerows(_rows(1200, 3))
    return shard_tfrecords(path, os.path.join(base, "dataset"), label="label",
                           keys=["id"]).dataset


def _train(dataset: str, out: str) -> str:
    from tfkfp.components.train.core import train

    train(dataset, out, epochs=8, hidden_units=(32,), seed=2)
    return out


def probe_rows() -> dict:
    """Rows with gaps in both float columns, unseen and empty strings, by column."""
    rng = np.random.default_rng(9)
    rows = list(_rows(40, 21))
    columns = {name: [row[1 + i] for row in rows] for i, name in enumerate(FEATURES)}
    out = {name: np.array([np.nan if v == "" else v for v in columns[name]], np.float32)
           for name in ("f_a", "f_b", "f_c")}
    out.update({name: np.array(columns[name], np.int64) for name in ("n_a", "n_b")})
    colours = np.array([c.encode() for c in columns["colour"]], object)
    colours[rng.random(len(colours)) < 0.2] = b"purple"
    colours[:2] = b""
    out["colour"] = colours
    out["f_a"][:3] = np.nan
    return out
