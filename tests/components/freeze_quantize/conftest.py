import pytest
from string_tables import string_table  # noqa: F401  (a session fixture)


def _export(schema, body, path, epochs, dataset):
    """Build a classifier whose 64 pixel inputs are stacked into one tensor, train it briefly
    and export it as a tfkfp SavedModel."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.model.savedmodel import export_model

    names = [c.name for c in schema.features]
    tf_keras.utils.set_random_seed(5)
    inputs = {n: tf_keras.Input(shape=(), name=n, dtype=tf.int64) for n in names}
    x = tf_keras.layers.Lambda(
        lambda d: tf.cast(tf.stack([d[n] for n in names], axis=1), tf.float32) / 16.0)(inputs)
    outputs = body(x)
    model = tf_keras.Model(inputs, outputs)
    if epochs:
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(make_dataset(dataset, batch_size=64, seed=1), epochs=epochs, verbose=0)
    return export_model(model, schema, path)


@pytest.fixture(scope="session")
def wide_model(demo_dataset, tmp_path_factory):
    """A ~600k-parameter MLP on the demo digits: weights dominate the file, as the size
    ratios assume (the shared demo_model spends a large share of its file on 64 input
    reshapes)."""
    import tf_keras

    from tfkfp.components.common.data.schema import Schema

    def body(x):
        x = tf_keras.layers.Dense(1024, activation="relu")(x)
        x = tf_keras.layers.Dense(512, activation="relu")(x)
        return tf_keras.layers.Dense(10, activation="softmax")(x)

    out = str(tmp_path_factory.mktemp("wide_model") / "model")
    return _export(Schema.load(demo_dataset), body, out, 4, demo_dataset)


@pytest.fixture(scope="session")
def erf_model(demo_dataset, tmp_path_factory):
    """An untrained tfkfp SavedModel using tf.math.erf, which has no TFLite builtin but is
    available as a TensorFlow (Flex) op."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.schema import Schema

    def body(x):
        x = tf_keras.layers.Dense(16)(x)
        x = tf_keras.layers.Lambda(tf.math.erf)(x)
        return tf_keras.layers.Dense(10, activation="softmax")(x)

    out = str(tmp_path_factory.mktemp("erf_model") / "model")
    return _export(Schema.load(demo_dataset), body, out, 0, demo_dataset)


@pytest.fixture(scope="session")
def auto_result(wide_model, demo_dataset, tmp_path_factory):
    """freeze_quantize in auto mode on the wide model: every mode converted and measured."""
    from tfkfp.components.common.tflite.parity import Timing
    from tfkfp.components.freeze_quantize.core import freeze_quantize

    out = tmp_path_factory.mktemp("auto")
    return freeze_quantize(wide_model, demo_dataset, str(out / "tflite"), str(out / "frozen"),
                           quantization="auto", calibration_examples=100, timing=Timing(32, 3))
from plain_models import cnn_299, digit_images, plain_cnn  # noqa: E402, F401  (session fixtures)
