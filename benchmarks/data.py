"""The benchmark table: N rows x 32 float columns plus an int label, written as CSV."""

import os

import numpy as np

FLOAT_COLUMNS = 32


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
