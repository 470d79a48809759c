"""Plain SavedModels as edge models often come: a signature that fixes its batch size (here
1, as in ``[1, 8, 8, 1]``), and an RGB input fed from a grey image column. The trained CNN's
weights are reused, so the gate's accuracy means something."""

import json

import numpy as np
import pytest

from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.export_tflite.core import export_tflite
from tfkfp.components.freeze_quantize.core import freeze_quantize


def _cnn(input_shape, batch_size=None):
    import tf_keras

    inputs = tf_keras.Input(input_shape, batch_size=batch_size, name="pixels")
    x = tf_keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = tf_keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    x = tf_keras.layers.Flatten()(x)
    return tf_keras.Model(inputs, tf_keras.layers.Dense(10, activation="softmax")(x))


def _trained(digit_images, channels):
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset

    tf_keras.utils.set_random_seed(4)
    model = _cnn((8, 8, channels))
    model.compile("adam", "sparse_categorical_crossentropy")
    images = make_dataset(digit_images, batch_size=64, seed=1).map(
        lambda features, label: (tf.repeat(features["image"], channels, axis=-1), label))
    model.fit(images, epochs=12, verbose=0)
    return model


@pytest.fixture(scope="module")
def batch_one_cnn(digit_images, tmp_path_factory):
    """The CNN's trained weights in a model whose signature takes exactly one image."""
    import tensorflow as tf

    fixed = _cnn((8, 8, 1), batch_size=1)
    fixed.set_weights(_trained(digit_images, 1).get_weights())
    out = str(tmp_path_factory.mktemp("batch_one") / "model")
    tf.saved_model.save(fixed, out)
    return out


@pytest.fixture(scope="module")
def rgb_cnn(digit_images, tmp_path_factory):
    """The CNN trained on the grey digits repeated into three channels: an RGB model."""
    import tensorflow as tf

    out = str(tmp_path_factory.mktemp("rgb") / "model")
    tf.saved_model.save(_trained(digit_images, 3), out)
    return out


def test_a_fixed_batch_of_one_is_fed_one_example_per_call(batch_one_cnn, digit_images,
                                                          tmp_path):
    result = freeze_quantize(batch_one_cnn, digit_images, str(tmp_path / "t"),
                             str(tmp_path / "f"), quantization="auto",
                             modes=("none", "int8"), max_accuracy_drop=0.01)
    for f in result.figures:
        assert f.batch_size == 1 and f.examples == len_eval(digit_images)
        assert f.reference_accuracy > 0.8 and f.accuracy_drop <= 0.01
    bundle = tmp_path / "bundle"
    exported = export_tflite(batch_one_cnn, digit_images, str(bundle), quantization="int8",
                             max_accuracy_drop=0.01, min_agreement=0.9)
    assert exported.figures.accuracy > 0.8
    assert json.load(open(bundle / "signature.json"))["inputs"]["pixels"]["shape"] == \
        [1, 8, 8, 1]


def len_eval(dataset):
    from tfkfp.components.common.data.dataset import Manifest

    return min(1000, Manifest.load(dataset).records("eval"))


def test_a_grey_column_feeds_an_rgb_model(rgb_cnn, digit_images, tmp_path):
    bundle = tmp_path / "bundle"
    result = export_tflite(rgb_cnn, digit_images, str(bundle), quantization="dynamic",
                           max_accuracy_drop=0.01, min_agreement=0.95)
    assert result.figures.reference_accuracy > 0.8  # the grey digits reach it as RGB
    pixels = json.load(open(bundle / "signature.json"))["inputs"]["pixels"]
    assert pixels["shape"] == [-1, 8, 8, 3] and "grey repeated into RGB" in \
        pixels["normalization"]


def test_rgb_to_grey_uses_the_luma_weights():
    from tfkfp.components.common.tflite.binding import _to_channels

    rgb = np.array([[[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.2]]]], np.float32)
    grey = _to_channels(rgb, 1)
    np.testing.assert_allclose(grey[0, 0, :, 0], [0.2989, 0.587, 0.2], atol=1e-4)
    assert _to_channels(grey, 3).shape == (1, 1, 3, 3)


def test_inputs_that_fix_different_batch_sizes_are_refused(digit_images, tmp_path):
    import tensorflow as tf

    class TwoInputs(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 1], tf.float32, name="a"),
                                      tf.TensorSpec([2, 8, 8, 1], tf.float32, name="b")])
        def serve(self, a, b):
            return {"out": tf.reduce_mean(a) + tf.reduce_mean(b)}

    module = TwoInputs()
    out = str(tmp_path / "two")
    tf.saved_model.save(module, out, signatures={"serving_default": module.serve})
    with pytest.raises(QuantizeInputError, match="fixes different batch sizes on its inputs"):
        freeze_quantize(out, digit_images, str(tmp_path / "t"), str(tmp_path / "f"),
                        input_mapping={"a": "image", "b": "image"})
