"""Plain SavedModels (no tfkfp signatures or assets), as a user brings them to the edge:
session fixtures over the demo digits as an image folder (8x8x1 PNGs, 10 classes)."""

import pytest


@pytest.fixture(scope="session")
def digit_images(demo_dir, tmp_path_factory):
    """The demo digits' PNG folder sharded: one image column, a label, a filename key."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("digit_images") / "dataset")
    shard_tfrecords(demo_dir.images, out)
    return out


@pytest.fixture(scope="session")
def plain_cnn(digit_images, tmp_path_factory):
    """A small CNN trained here on the digit images and saved with tf.saved_model.save: one
    ``serving_default`` input named ``pixels`` (not a column name), softmax over 10 classes
    in the label vocabulary's order."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset

    tf_keras.utils.set_random_seed(4)
    inputs = tf_keras.Input((8, 8, 1), name="pixels")
    x = tf_keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = tf_keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    x = tf_keras.layers.Flatten()(x)
    outputs = tf_keras.layers.Dense(10, activation="softmax", name="scores")(x)
    model = tf_keras.Model(inputs, outputs)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    images = make_dataset(digit_images, batch_size=64, seed=1).map(
        lambda features, label: (features["image"], label))
    model.fit(images, epochs=12, verbose=0)
    out = str(tmp_path_factory.mktemp("plain_cnn") / "model")
    tf.saved_model.save(model, out)
    return out


@pytest.fixture(scope="session")
def plain_mobilenet(tmp_path_factory):
    """MobileNetV2 (alpha 0.35, 32x32x1 input, weights=None, 10 classes) saved with
    tf.saved_model.save: int16x8 does not run in LiteRT (DEPTHWISE_CONV_2D fails to
    prepare), the other modes do."""
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(2)
    model = tf_keras.applications.MobileNetV2(input_shape=(32, 32, 1), alpha=0.35,
                                              weights=None, classes=10)
    out = str(tmp_path_factory.mktemp("plain_mobilenet") / "model")
    tf.saved_model.save(model, out)
    return out


@pytest.fixture(scope="session")
def cnn_299(tmp_path_factory):
    """A small untrained CNN on 299x299 images, InceptionV3's input size at a fraction of its
    work (two strided convolutions, global pooling, softmax over 10 classes), saved with
    tf.saved_model.save: what a user brings."""
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(7)
    inputs = tf_keras.Input((299, 299, 1), name="pixels")
    x = tf_keras.layers.Conv2D(8, 3, strides=2, activation="relu")(inputs)
    x = tf_keras.layers.Conv2D(16, 3, strides=2, activation="relu")(x)
    x = tf_keras.layers.GlobalAveragePooling2D()(x)
    outputs = tf_keras.layers.Dense(10, activation="softmax")(x)
    out = str(tmp_path_factory.mktemp("cnn_299") / "model")
    tf.saved_model.save(tf_keras.Model(inputs, outputs), out)
    return out
