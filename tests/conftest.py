import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def write_csv(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")
    return str(path)


@pytest.fixture
def table_csv(tmp_path):
    """A small mixed-type table: int key, two floats, a string feature, a string label."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(500):
        rows.append([i, round(float(rng.normal()), 4), round(float(rng.uniform()), 4),
                     rng.choice(["red", "green", "blue"]), rng.choice(["cat", "dog"])])
    return write_csv(tmp_path / "table.csv", ["id", "x", "y", "color", "animal"], rows), rows


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory):
    from tfkfp.components.common.demo_data import write_demo_data

    return write_demo_data(str(tmp_path_factory.mktemp("demo")))
