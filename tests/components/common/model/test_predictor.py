"""The model runtime (common.model.predictor). The SavedModel Predictor feeds the scalar
float32 columns as one packed matrix: its answers must be exactly those of the
``serving_raw`` signature called one input per column, for a table of floats with gaps, int64
columns (a second block), a string column and a shaped float column. A path that is no model
is refused with ModelInputError, naming what it found."""

import numpy as np
import pytest

from tfkfp.components.common.model.predictor import (
    FLOAT_BLOCK,
    INT64_BLOCK,
    ModelInputError,
    load_predictor,
)

FLOATS = ["a", "b", "c"]
INTS = ["n", "m"]
COLOURS = ["red", "vert clair", "青"]


@pytest.fixture(scope="module")
def mixed_model(tmp_path_factory):
    """An untrained tfkfp SavedModel over three floats (imputed in the graph), two int64, a
    string (one-hot through StringLookup) and a float[2] column; three classes."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.schema import Column, Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema((*[Column(n, "float32") for n in FLOATS], Column("n", "int64"),
                     Column("m", "int64"),
                     Column("s", "string"), Column("v", "float32", shape=(2,)),
                     Column("id", "int64", role="key"),
                     Column("label", "string", role="label", vocabulary=("x", "y", "z"))))
    tf_keras.utils.set_random_seed(5)
    inputs = {n: tf_keras.Input((), name=n, dtype=tf.float32) for n in FLOATS}
    inputs["n"] = tf_keras.Input((), name="n", dtype=tf.int64)
    inputs["m"] = tf_keras.Input((), name="m", dtype=tf.int64)
    inputs["s"] = tf_keras.Input((), name="s", dtype=tf.string)
    inputs["v"] = tf_keras.Input((2,), name="v", dtype=tf.float32)
    parts = [tf_keras.layers.Reshape((1,))(tf.where(tf.math.is_nan(inputs[n]), 0.25,
                                                     inputs[n])) for n in FLOATS]
    parts += [tf_keras.layers.Reshape((1,))(tf.cast(inputs[n], tf.float32)) for n in INTS]
    parts.append(tf_keras.layers.StringLookup(vocabulary=COLOURS,
                                              output_mode="one_hot")(inputs["s"]))
    parts.append(inputs["v"])
    x = tf_keras.layers.Dense(16, activation="relu")(tf_keras.layers.Concatenate()(parts))
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(3, activation="softmax")(x))
    return export_model(model, schema, str(tmp_path_factory.mktemp("mixed") / "model"))


def _rows(count, seed=0):
    rng = np.random.default_rng(seed)
    features = {n: rng.normal(size=count).astype(np.float32) for n in FLOATS}
    features["a"][::3] = np.nan  # gaps
    features["c"][1::4] = np.nan
    features["n"] = rng.integers(-5, 50, size=count)
    features["m"] = rng.integers(-2**40, 2**40, size=count)
    features["s"] = np.array([b"", "青".encode(), b"red", b"unknown"] * count,
                             dtype=object)[:count]
    features["v"] = rng.normal(size=(count, 2)).astype(np.float32)
    return features


def _per_column(model_dir, features):
    """The signature called one input per column: what the Predictor did before."""
    import tensorflow as tf

    fn = tf.saved_model.load(model_dir).signatures["serving_raw"]
    return fn(**{n: tf.constant(v) for n, v in features.items()})["probabilities"].numpy()


@pytest.mark.parametrize("count", [1, 7, 64])
def test_the_packed_call_answers_exactly_as_the_per_column_call(mixed_model, count):
    predictor = load_predictor(mixed_model)
    assert "_packed_call" in predictor.predict.__qualname__  # the packed path is the one run
    features = _rows(count, seed=count)
    got = predictor.predict(features)
    want = _per_column(mixed_model, features)
    assert got.shape == (count, 3) and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_the_blocks_given_as_one_matrix_each_answer_exactly_as_the_columns(mixed_model):
    predictor = load_predictor(mixed_model)
    floats, ints = predictor.blocks["float32"], predictor.blocks["int64"]  # columns in order
    assert (sorted(floats), sorted(ints)) == (sorted(FLOATS), sorted(INTS))
    features = _rows(9, seed=3)
    block = {FLOAT_BLOCK: np.stack([features[n] for n in floats], axis=1),
             INT64_BLOCK: np.stack([features[n] for n in ints], axis=1),
             **{n: v for n, v in features.items() if n not in FLOATS + INTS}}
    np.testing.assert_array_equal(predictor.predict(block), _per_column(mixed_model, features))


def test_columns_the_matrix_cannot_take_go_one_per_column_as_before(mixed_model):
    predictor = load_predictor(mixed_model)
    features = _rows(5)
    matrix = np.stack([features[n] for n in FLOATS], axis=1)
    views = dict(features, **{n: matrix[:, i] for i, n in enumerate(FLOATS)})  # strided
    np.testing.assert_array_equal(predictor.predict(views), predictor.predict(features))
    # a float64 column is refused by the signature, as it was
    wide = dict(features, b=features["b"].astype(np.float64))
    with pytest.raises(Exception) as packed_error:
        predictor.predict(wide)
    with pytest.raises(Exception) as column_error:
        _per_column(mixed_model, wide)
    assert type(packed_error.value) is type(column_error.value)


def test_a_model_with_one_float_column_is_called_per_column(string_table):
    """The string model (one float, one string input) has nothing to pack."""
    predictor = load_predictor(string_table.model)
    assert predictor.predict.__qualname__.endswith("per_column")
    features = {"x": np.array([0.5, np.nan, 2.0], np.float32),
                "colour": np.array([b"blue", b"", b"zzz"], dtype=object)}
    np.testing.assert_array_equal(predictor.predict(features),
                                  _per_column(string_table.model, features))


def test_what_is_not_a_model_is_refused_naming_what_was_found(tmp_path):
    with pytest.raises(ModelInputError, match="does not exist"):
        load_predictor(str(tmp_path / "nowhere"))
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelInputError, match=r"neither saved_model.pb .* nor model.tflite .*"
                                              r"it has \['notes.txt'\]"):
        load_predictor(str(tmp_path))
    with pytest.raises(ModelInputError, match="is not a SavedModel directory, a TFLite bundle "
                                              "directory or a .tflite file"):
        load_predictor(str(tmp_path / "notes.txt"))
