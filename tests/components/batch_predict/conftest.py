"""Fixtures for batch_predict: a TFLite bundle of the demo model, readers for the outputs,
and the reference predictions of a direct call of the SavedModel."""

import csv
import glob
import json
import os

import pytest
from string_tables import string_table  # noqa: F401  (a session fixture)


@pytest.fixture(scope="session")
def tflite_bundle(demo_model, tmp_path_factory):
    """The demo model converted from serving_raw: model.tflite beside labels.txt."""
    import shutil

    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_saved_model(demo_model,
                                                         signature_keys=["serving_raw"])
    bundle = tmp_path_factory.mktemp("tflite") / "bundle"
    bundle.mkdir()
    (bundle / "model.tflite").write_bytes(converter.convert())
    shutil.copy(os.path.join(demo_model, "assets", "labels.txt"), bundle / "labels.txt")
    return str(bundle)


def _read_file(path, fmt):
    if fmt == "jsonl":
        return [json.loads(line) for line in open(path)]
    if fmt == "csv":
        return list(csv.DictReader(open(path)))
    import tensorflow as tf

    rows = []
    for record in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(record.numpy())
        row = {}
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            values = list(getattr(feature, kind).value)
            values = [v.decode() if isinstance(v, bytes) else v for v in values]
            row[name] = values if name.startswith("top_") else values[0]
        rows.append(row)
    return rows


@pytest.fixture
def read_outputs():
    """``read(folder, fmt, kind="predictions")``: every row of the folder's shards, in order."""
    def read(folder, fmt="jsonl", kind="predictions"):
        rows = []
        for path in sorted(glob.glob(os.path.join(folder, f"{kind}-*-of-*.{fmt}"))):
            rows += _read_file(path, fmt)
        return rows

    return read


@pytest.fixture(scope="session")
def direct_predictions(demo_model):
    """``direct(files) -> (ids, probabilities)``: the SavedModel's serving_default called on
    the serialized records of the files, the reference the component must equal."""
    import tensorflow as tf

    serve = tf.saved_model.load(demo_model).signatures["serving_default"]

    def direct(files):
        records = [r.numpy() for f in files for r in tf.data.TFRecordDataset(f)]
        ids = tf.io.parse_example(records, {"id": tf.io.FixedLenFeature([], tf.int64)})["id"]
        probs = serve(examples=tf.constant(records))["probabilities"].numpy()
        return ids.numpy(), probs

    return direct


@pytest.fixture(scope="session")
def columns_eval_files(demo_columns_dataset):
    """The eval shards of the demo digits sharded one feature per column."""
    from tfkfp.components.common.data.dataset import split_files

    return split_files(demo_columns_dataset, "eval")[0]


@pytest.fixture(scope="session")
def predictor(demo_model):
    """The demo SavedModel loaded once (batch_predict takes it instead of loading again)."""
    from tfkfp.components.common.model.predictor import load_predictor

    return load_predictor(demo_model)
