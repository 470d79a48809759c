"""A table with a Unicode string feature (commas, quotes) and a float feature, and a tfkfp
model over it shaped like the models train builds under the missing-values contract: the
float imputed in the graph as ``tf.where(tf.not_equal(x, x), fill, x)`` before
normalisation, the string one-hot through ``StringLookup`` (unknown and empty strings get the
out-of-vocabulary index). Built once per test session (paths are cached), shared by the
freeze_quantize, export_tflite and batch_predict tests."""

import csv
import dataclasses
import os

import numpy as np
import pytest

COLOURS = ["rouge, foncé", 'say "hi"', "绿色", "blue", "naïve 'x', ok"]
FLIPPED = {"rouge, foncé", "绿色"}  # these colours invert the label
THRESHOLD = 1.5  # x above it inverts the label again; no training x within 0.3 of it
UNKNOWN = ["", "zzz", "Rouge, foncé", "say hi"]  # a gap, an unseen value, near misses
_CACHE = {}


def label_of(colour: str, x: float) -> str:
    return "oui" if (colour in FLIPPED) != (x > THRESHOLD) else "non"


def _rows(count: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        x = float(rng.normal())
        while abs(x - THRESHOLD) < 0.3:
            x = float(rng.normal())
        colour = COLOURS[int(rng.integers(len(COLOURS)))]
        rows.append([i, round(x, 4), colour, label_of(colour, x)])
    return rows


@dataclasses.dataclass(frozen=True)
class StringTable:
    dataset: str  # Dataset directory
    model: str  # tfkfp SavedModel
    fill: float  # what the model imputes for a gap in x


@pytest.fixture(scope="session")
def string_table(tmp_path_factory) -> StringTable:
    """The dataset and model, built once per session whichever conftest imports this."""
    base = str(tmp_path_factory.getbasetemp() / "string_table")
    return StringTable(string_dataset(base), string_model(base), fill_of(base))


def string_dataset(base: str) -> str:
    """A Dataset directory (shard_tfrecords of a quoted CSV): id key, x, colour, label."""
    if "dataset" not in _CACHE:
        from tfkfp.components.shard_tfrecords.core import shard_tfrecords

        os.makedirs(base, exist_ok=True)
        path = os.path.join(base, "colours.csv")
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)  # quotes the values holding commas and quotes
            writer.writerow(["id", "x", "colour", "label"])
            writer.writerows(_rows(1500, 11))
        _CACHE["dataset"] = shard_tfrecords(path, os.path.join(base, "dataset"),
                                            label="label", keys=["id"]).dataset
    return _CACHE["dataset"]


def string_model(base: str) -> str:
    """The tfkfp SavedModel over string_dataset, trained briefly."""
    if "model" not in _CACHE:
        _CACHE["model"] = _train(string_dataset(base), os.path.join(base, "model"))
    return _CACHE["model"]


def fill_of(base: str) -> float:
    """The fill the model imputes for a gap in x: the training mean."""
    string_model(base)
    return _CACHE["fill"]


def _train(dataset: str, out: str) -> str:
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema.load(dataset)
    xs = np.concatenate([f["x"].numpy() for f, _ in make_dataset(dataset, batch_size=512,
                                                                 shuffle=False)])
    fill = _CACHE["fill"] = float(np.float32(xs.mean()))
    tf_keras.utils.set_random_seed(5)
    x_in = tf_keras.Input(shape=(), name="x", dtype="float32")
    colour_in = tf_keras.Input(shape=(), name="colour", dtype="string")
    x = tf_keras.layers.Lambda(lambda t: tf.where(tf.not_equal(t, t), fill, t))(x_in)
    x = tf_keras.layers.Normalization(mean=float(xs.mean()), variance=float(xs.var()))(
        tf_keras.layers.Reshape((1,))(x))
    colour = tf_keras.layers.StringLookup(vocabulary=sorted(COLOURS), output_mode="one_hot")
    h = tf_keras.layers.Concatenate()([x, tf_keras.layers.Flatten()(colour(colour_in))])
    h = tf_keras.layers.Dense(32, activation="relu")(h)
    outputs = tf_keras.layers.Dense(2, activation="softmax")(h)
    model = tf_keras.Model({"x": x_in, "colour": colour_in}, outputs)
    model.compile(tf_keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy")
    model.fit(make_dataset(dataset, batch_size=32, seed=1), epochs=25, verbose=0)
    return export_model(model, schema, out)


def probe_rows():
    """Rows with gaps and unknown strings next to known values: x has NaNs, colour has the
    empty string, an unseen value and near misses of known ones."""
    colours = COLOURS + UNKNOWN
    xs = [float("nan"), -1.0, 0.2, 2.5]
    rows = [(x, c) for x in xs for c in colours]
    return {"x": np.array([r[0] for r in rows], np.float32),
            "colour": np.array([r[1].encode() for r in rows], object)}


def known_colour(rows) -> np.ndarray:
    """Rows whose colour the model was trained on (an unknown one has no trained answer)."""
    return np.isin(rows["colour"], [c.encode() for c in COLOURS])


def savedmodel_outputs(model_dir: str, rows) -> dict:
    """The SavedModel's serving_raw outputs on raw rows (NaN and unknown strings included)."""
    import tensorflow as tf

    fn = tf.saved_model.load(model_dir).signatures["serving_raw"]
    out = fn(**{k: tf.constant(v) for k, v in rows.items()})
    return {k: v.numpy() for k, v in out.items()}


def confident(probabilities: np.ndarray, margin: float = 0.15) -> np.ndarray:
    """Rows whose top class leads by more than margin: quantization cannot flip them."""
    top = np.sort(probabilities, axis=1)
    return top[:, -1] - top[:, -2] > margin
