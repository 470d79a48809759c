"""The benchmark table: N rows x 32 float columns plus an int label, written as CSV, and
sharded in each TFRecord layout."""

import os
from typing import Dict

import numpy as np

FLOAT_COLUMNS = 32
LAYOUTS = ("packed", "columns", "blocks")


def write_table(directory: str, rows: int, seed: int = 0) -> str:
    path = os.path.join(directory, f"table-{rows}.csv")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(rows, FLOAT_COLUMNS)).astype(np.float32)
    labels = rng.integers(0, 10, size=rows)
    header = ",".join([f"f{i:02d}" for i in range(FLOAT_COLUMNS)] + ["label"])
    body = np.column_stack([values, labels])
    fmt = ["%.6g"] * FLOAT_COLUMNS + ["%d"]
    np.savetxt(path + ".tmp", body, fmt=fmt, delimiter=",", header=header, comments="")
    os.replace(path + ".tmp", path)
    return path


def shard_layouts(csv_path: str, work: str, name: str, num_shards: int) -> Dict[str, str]:
    """The table sharded once per layout, so that a scenario compares the layouts on the
    same rows: layout -> folder (``name`` for packed, the default; ``name-LAYOUT`` else), in
    LAYOUTS' order."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    folders = {layout: os.path.join(work, name if layout == "packed" else f"{name}-{layout}")
               for layout in LAYOUTS}
    for layout, folder in folders.items():
        shard_tfrecords(csv_path, folder, label="label", num_shards=num_shards, layout=layout)
    return folders
