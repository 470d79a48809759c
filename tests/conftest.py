import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import shutil

import numpy as np
import pytest
from beam_table import beam_table  # noqa: F401  (a session fixture for every test)
from cluster_tools import namespace
from pubsub_emulator import pubsub_emulator  # noqa: F401  (likewise)


def pytest_configure(config):
    """Two logical CPU devices, so the mirrored strategy has two replicas on one CPU (this
    must happen before TensorFlow initialises its devices). TensorFlow is first imported
    here, hushed: its start-up lines (oneDNN, the CUDA probe's cuInit error) are written to
    file descriptor 2 before TF_CPP_MIN_LOG_LEVEL applies."""
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # lists the physical devices, which leaves them settable
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])


@pytest.fixture
def isolated():
    """Each local pipeline task sees only copies of its own input artifacts, as in its own pod
    on a Kubeflow backend (tests/isolated_tasks.py); where this machine cannot mount (not
    root), the run goes on with the shared filesystem."""
    from isolated_tasks import isolated_tasks, isolation_available

    if not isolation_available():
        yield None
        return
    with isolated_tasks() as tasks:
        yield tasks
    assert tasks, "no task ran isolated: kfp.local no longer calls the patched task handler"


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


COLOURS = ["rouge, foncé", 'say "hi"', "青", "plain"]


def messy_rows(count: int, seed: int = 11):
    """Rows like users' tables: a Unicode string feature with commas and quotes, numeric and
    string gaps, ``nan`` text, a whole-number column with blanks, and a string label that
    follows the features (so a model can learn it)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        colour = int(rng.integers(len(COLOURS)))
        x = float(rng.normal())
        label = "yes" if x + (colour == 0) * 1.5 > 0.3 else "no"
        rows.append([i, "" if i % 9 == 4 else round(x, 4), "nan" if i % 13 == 6 else
                     round(float(rng.uniform()), 4), "" if i % 11 == 3 else COLOURS[colour],
                     "" if i % 7 == 2 else int(rng.integers(0, 5)), label])
    return rows


MESSY_HEADER = ["id", "x", "y", "colour", "count", "label"]


def write_quoted_csv(path, header, rows):
    """A CSV written with the csv module, so commas and quotes inside values are quoted."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def write_messy_csv(path, rows):
    return write_quoted_csv(path, MESSY_HEADER, rows)


@pytest.fixture
def messy_csv(tmp_path):
    rows = messy_rows(600)
    return write_messy_csv(tmp_path / "messy.csv", rows), rows


REGRESSION_HEADER = ["house", "area", "age", "district", "rooms", "price"]
DISTRICTS = ["Nord, centre", 'the "old" town', "東区", "harbour"]


def regression_rows(count: int, seed: int = 5):
    """A table with a continuous label (``price``, in thousands) that follows the features,
    a string key, a Unicode district with commas and quotes, and blank cells."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        area, age = float(rng.uniform(30, 200)), float(rng.uniform(0, 80))
        district = int(rng.integers(len(DISTRICTS)))
        rooms = int(rng.integers(1, 7))
        price = 50 + 2.0 * area - 0.8 * age + 40 * (district == 0) + 5 * rooms \
            + float(rng.normal(0, 5))
        rows.append([f"h-{i:05d}", round(area, 2), "" if i % 17 == 5 else round(age, 1),
                     "" if i % 19 == 7 else DISTRICTS[district], rooms, round(price, 2)])
    return rows


def write_regression_csv(path, rows):
    return write_quoted_csv(path, REGRESSION_HEADER, rows)


@pytest.fixture(scope="session")
def regression_csv(tmp_path_factory):
    return write_regression_csv(tmp_path_factory.mktemp("houses") / "houses.csv",
                                regression_rows(1200))


@pytest.fixture(scope="session")
def regression_dataset(regression_csv, tmp_path_factory):
    """The house-price table sharded (label ``price``, a float; key ``house``)."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("houses_dataset") / "dataset")
    shard_tfrecords(regression_csv, out, label="price", keys=["house"], eval_fraction=0.2)
    return out


@pytest.fixture(scope="session")
def regression_model(regression_dataset, tmp_path_factory):
    """A tfkfp regressor trained by train on the house prices (a small MLP)."""
    from tfkfp.components.train.core import train

    out = str(tmp_path_factory.mktemp("houses_model") / "model")
    train(regression_dataset, out, epochs=12, batch_size=32, hidden_units="32",
          learning_rate=0.01, seed=2)
    return out


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory):
    from tfkfp.components.common.data.demo_data import write_demo_data

    return write_demo_data(str(tmp_path_factory.mktemp("demo")))


@pytest.fixture(scope="session")
def demo_dataset(demo_dir, tmp_path_factory):
    """The demo digits table sharded into a Dataset directory (label ``label``, key ``id``)."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("demo_dataset") / "dataset")
    shard_tfrecords(demo_dir.csv, out, label="label", keys=["id"])
    return out


@pytest.fixture(scope="session")
def demo_blocks_dataset(demo_dir, tmp_path_factory):
    """The demo digits sharded in blocks of 100 rows a record (``layout="blocks"``);
    ``demo_dataset`` holds the same rows, one a record."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("demo_blocks") / "dataset")
    shard_tfrecords(demo_dir.csv, out, label="label", keys=["id"], layout="blocks",
                    block_rows=100)
    return out


@pytest.fixture(scope="session")
def demo_columns_dataset(demo_dir, tmp_path_factory):
    """The demo digits sharded one feature per column (``layout="columns"``), as every Dataset
    was before the packed layout; ``demo_dataset`` holds the same rows packed."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("demo_columns") / "dataset")
    shard_tfrecords(demo_dir.csv, out, label="label", keys=["id"], layout="columns")
    return out


@pytest.fixture(scope="session")
def unlabeled_dataset(demo_dir, tmp_path_factory):
    """The demo digits sharded without a label (key ``id``)."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("unlabeled") / "dataset")
    shard_tfrecords(demo_dir.csv, out, keys=["id"])
    return out


@pytest.fixture(scope="session")
def demo_model(demo_dataset, tmp_path_factory):
    """A tfkfp SavedModel (both signatures) of a ~170k-parameter MLP trained on the demo data."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema.load(demo_dataset)
    tf_keras.utils.set_random_seed(3)
    inputs = {c.name: tf_keras.Input(shape=(), name=c.name, dtype=tf.int64)
              for c in schema.features}
    x = tf_keras.layers.Concatenate()(
        [tf_keras.layers.Reshape((1,))(tf.cast(v, tf.float32) / 16.0) for v in inputs.values()])
    x = tf_keras.layers.Dense(512, activation="relu")(x)
    x = tf_keras.layers.Dense(256, activation="relu")(x)
    outputs = tf_keras.layers.Dense(len(schema.label.vocabulary), activation="softmax")(x)
    model = tf_keras.Model(inputs, outputs)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(make_dataset(demo_dataset, batch_size=64, seed=1), epochs=8, verbose=0)
    out = str(tmp_path_factory.mktemp("demo_model") / "model")
    return export_model(model, schema, out, {"framework": "tensorflow"})


@pytest.fixture
def dataset_copy(demo_dataset, tmp_path):
    """A copy of demo_dataset this test may damage (cut or flip its shards)."""
    out = tmp_path / "dataset"
    shutil.copytree(demo_dataset, out)
    return str(out)


def cut_shard(path, keep):
    """Truncate an uncompressed TFRecord shard after its first ``keep`` records, exactly on a
    record boundary (every record left reads cleanly). Returns (records, bytes) before and
    the bytes after."""
    import tensorflow as tf

    lengths = [len(r.numpy()) for r in tf.data.TFRecordDataset(path)]
    before = os.path.getsize(path)
    os.truncate(path, sum(n + 16 for n in lengths[:keep]))  # 16: the frame of a record
    return len(lengths), before, os.path.getsize(path)


def cut_shard_of(dataset, split, index, keep):
    """``cut_shard`` on shard ``index`` of ``split`` in the Dataset folder ``dataset``.
    Returns the pattern its size check refuses it with: the shard's path and both sizes."""
    import re

    from tfkfp.components.common.data.dataset import Manifest

    shard = Manifest.load(dataset).shard_files(split)[index]
    _, before, after = cut_shard(shard, keep)
    return f"{re.escape(shard)} is {after} bytes, expected {before} bytes"


def flip_byte(path, record):
    """Invert one byte in the middle of a record's data: the shard keeps its size, and reading
    stops at that record with a checksum error. Returns the shard's record count."""
    import tensorflow as tf

    lengths = [len(r.numpy()) for r in tf.data.TFRecordDataset(path)]
    # 16: a record's frame, length (8) and its CRC (4) before the data, the data's CRC after
    at = sum(n + 16 for n in lengths[:record]) + 12 + lengths[record] // 2
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0xFF
    open(path, "wb").write(bytes(data))
    return len(lengths)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A SeaweedFS S3 server on loopback for the whole session (see tests/s3_server.py)."""
    from s3_server import S3Server

    server = S3Server(str(tmp_path_factory.mktemp("seaweedfs")))
    yield server
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch):
    """The S3 server's endpoint and keys in the environment, as a pod would have them, and
    a fresh ``s3://`` prefix for this test."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    return s3_server.fresh_prefix()


def summary_row(out: str, label: str) -> str:
    """The text of one output's row in tfkfp run's aligned summary: its first line (the
    label, then its figures) joined with the figures wrapped onto the lines below it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(label + " "))
    row = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" ") or not line.strip():
            break
        row.append(line.strip())
    return " ".join(row)


@pytest.fixture(scope="session")
def tools():
    """``tools.tool(name)``, ``tools.run(args)``, ``tools.missing(reason)`` and the paths of
    the cluster tools (tests/cluster_tools.py), for the manifest and image tests."""
    return namespace()
