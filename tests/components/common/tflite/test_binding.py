"""Binding a SavedModel signature's inputs to a Dataset's columns, and reading its outputs:
the rules and every refusal, on signature descriptions (no model is converted here)."""

import dataclasses
import json
import re

import numpy as np
import pytest
import tensorflow as tf

from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.tflite.binding import bind, parse_mapping
from tfkfp.components.common.tflite.inputs import QuantizeInputError


@dataclasses.dataclass
class Signature:
    """What bind reads of a loaded signature function: its named inputs and outputs."""

    structured_input_signature: tuple
    structured_outputs: dict


def signature(inputs, outputs=None):
    specs = {n: tf.TensorSpec(shape, dtype, name=n) for n, (shape, dtype) in inputs.items()}
    outs = outputs or {"scores": ([None, 10], tf.float32)}
    return Signature(((), specs), {n: tf.TensorSpec(s, d) for n, (s, d) in outs.items()})


def refusal(fn, schema, mapping=None) -> str:
    """The message bind refuses ``fn``'s serving_default with, against dataset d's
    ``schema`` (and ``mapping``)."""
    with pytest.raises(QuantizeInputError) as refused:
        bind(fn, "serving_default", schema, "dataset d", mapping)
    return str(refused.value)


IMAGES = Schema((Column("filename", "string", role="key"),
                 Column("image", "string", encoding="image", image_shape=(8, 8, 1)),
                 Column("label", "string", role="label", vocabulary=tuple("0123456789"))))
TABLE = Schema((Column("x", "float32"), Column("count", "int64"), Column("colour", "string"),
                Column("label", "string", role="label", vocabulary=("no", "yes"))))


def test_a_one_input_model_takes_the_single_image_column_resized():
    fn = signature({"input_1": ([None, 16, 16, 1], tf.float32)})
    binding = bind(fn, "serving_default", IMAGES, "dataset d")
    assert binding.columns == {"input_1": "image"}
    assert binding.resize == {"input_1": (16, 16)}
    fed = binding.feed({"image": np.ones((3, 8, 8, 1), np.float32)})
    assert fed["input_1"].shape == (3, 16, 16, 1) and fed["input_1"].dtype == np.float32
    assert binding.reading.scores == "scores" and binding.reading.accuracy  # 10 classes


def test_inputs_are_fed_by_name_and_by_mapping_with_numbers_cast():
    fn = signature({"x": ([None], tf.float32), "n": ([None], tf.float32)},
                   {"value": ([None, 1], tf.float32)})
    binding = bind(fn, "serving_default", TABLE, "dataset d", parse_mapping('{"n": "count"}'))
    assert binding.columns == {"n": "count", "x": "x"}
    fed = binding.feed({"x": np.zeros(2, np.float32), "count": np.array([3, 4])})
    assert fed["n"].dtype == np.float32 and fed["n"].tolist() == [3.0, 4.0]
    assert binding.reading.scores is None  # one value per example: compared by relative error


def test_class_scores_whose_count_is_not_the_labels_are_compared_without_accuracy():
    fn = signature({"image": ([None, 8, 8, 1], tf.float32)}, {"p": ([None, 1000], tf.float32)})
    reading = bind(fn, "serving_default", IMAGES, "dataset d").reading
    assert reading.scores == "p" and not reading.accuracy


@pytest.mark.parametrize("inputs, schema, message", [
    pytest.param(
        {"pixels": ([None, 8, 8, 1], tf.float32), "mask": ([None, 4], tf.float32)}, IMAGES,
        "signature 'serving_default' takes inputs that no feature column of dataset d feeds: "
        "mask (float32 [None, 4]), pixels (float32 [None, 8, 8, 1]); its feature columns "
        "are ['image (image, decoded to float32 [None, 8, 8, 1])'] (map signature inputs to "
        'columns with input_mapping, e.g. {"mask": "<column>"})',
        id="an input no column feeds"),
    pytest.param(
        {"x": ([None, 3], tf.float32)}, TABLE,
        "column 'x' of dataset d (float32 [None]) cannot feed signature 'serving_default' "
        "input 'x' (float32 [None, 3]): the shapes differ; the feature columns are "
        "['colour (string [None])', 'count (int64 [None])', 'x (float32 [None])']",
        id="a shape that cannot feed the input"),
])
def test_an_input_that_cannot_be_fed_is_refused_naming_both_sides(inputs, schema, message):
    assert refusal(signature(inputs), schema) == message


def test_a_mapping_to_a_column_that_does_not_exist():
    fn = signature({"pixels": ([None, 8, 8, 1], tf.float32)})
    assert re.search(r"pixels \(float32 \[None, 8, 8, 1\], mapped to 'img'\); its feature "
                     r"columns are \['image", refusal(fn, IMAGES, {"pixels": "img"}))
    assert re.search(r"input_mapping names \['pixel'\], which are not inputs of signature "
                     r"'serving_default'; its inputs are \['pixels \(float32",
                     refusal(fn, IMAGES, {"pixel": "image"}))


def test_an_image_with_other_channels_and_a_string_for_a_number_are_refused():
    rgba = signature({"input_1": ([None, 32, 32, 4], tf.float32)})
    assert re.search(r"column 'image' of dataset d \(image, decoded to float32 \[None, 8, 8, "
                     r"1\]\) cannot feed .*\(float32 \[None, 32, 32, 4\]\): the shapes",
                     refusal(rgba, IMAGES))
    rgb = bind(signature({"input_1": ([None, 32, 32, 3], tf.float32)}), "serving_default",
               IMAGES, "dataset d")  # grey feeds RGB, converted on the way in
    assert rgb.channels == {"input_1": 3} and rgb.resize == {"input_1": (32, 32)}
    fn = signature({"colour": ([None], tf.float32)})
    assert re.search(r"column 'colour' of dataset d \(string \[None\]\) cannot feed .* input "
                     r"'colour' \(float32 \[None\]\): the dtypes differ", refusal(fn, TABLE))


@pytest.mark.parametrize("text, found", [
    ("{input_1: image}", "is not JSON"),
    (json.dumps(["image"]), "expected an object of signature input name -> Dataset column"),
    (json.dumps({"input_1": 3}), "expected an object"),
])
def test_a_mapping_that_is_not_an_object_of_names(text, found):
    with pytest.raises(QuantizeInputError, match=found):
        parse_mapping(text)
    assert parse_mapping("") == {} and parse_mapping({"a": "b"}) == {"a": "b"}
