import os

import numpy as np
import pytest

from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Column, Schema, SchemaError
from tfkfp.components.common.model import savedmodel


def test_both_signatures_give_the_same_predictions(demo_model, demo_dataset):
    """The demo shards are packed; serving_default reads them as they are and reads the same
    rows sent with one feature per column, as outside clients send them."""
    import tensorflow as tf

    from tfkfp.components.common.data.examples import encode_examples, split_rows
    from tfkfp.components.common.data.parsing import example_parser

    loaded = tf.saved_model.load(demo_model)
    assert set(loaded.signatures) == {savedmodel.SIGNATURE_EXAMPLES, savedmodel.SIGNATURE_RAW}
    schema = Schema.load(demo_dataset)
    assert schema.layout == "packed" and schema.packed[0].dtype == "int64"
    files = tf.io.gfile.glob(os.path.join(demo_dataset, "eval", "*"))
    serialized = next(iter(tf.data.TFRecordDataset(sorted(files)).batch(64)))
    features = example_parser(schema, schema.features)(serialized)
    per_column = tf.constant(split_rows(encode_examples(
        {name: ("int64", values.numpy()) for name, values in features.items()})))
    from_raw = loaded.signatures["serving_raw"](**features)
    for examples in (serialized, per_column):
        from_examples = loaded.signatures["serving_default"](examples=examples)
        np.testing.assert_allclose(from_examples["probabilities"], from_raw["probabilities"],
                                   atol=1e-6)
    assert list(from_raw["classes"].numpy()) == [
        str(i).encode() for i in from_raw["class_ids"].numpy()]


def test_serving_default_refuses_a_batch_missing_a_feature_naming_it(demo_model):
    import tensorflow as tf

    from tfkfp.components.common.data.examples import encode_examples, split_rows

    loaded = tf.saved_model.load(demo_model)
    partial = split_rows(encode_examples({"pixel_0": ("int64", np.zeros(2, np.int64))}))
    with pytest.raises(tf.errors.InvalidArgumentError, match="pixel_1"):
        loaded.signatures["serving_default"](examples=tf.constant(partial))


def test_model_carries_its_labels_schema_and_metadata(demo_model, demo_dataset):
    assert savedmodel.is_savedmodel(demo_model)
    assert savedmodel.load_labels(demo_model) == [str(i) for i in range(10)]
    assert savedmodel.load_schema(demo_model) == Schema.load(demo_dataset)
    assert savedmodel.load_metadata(demo_model)["framework"] == "tensorflow"
    leftovers = [n for n in os.listdir(os.path.dirname(demo_model)) if n.startswith(".")]
    assert not leftovers


def test_model_predicts_the_eval_split_well(demo_model, demo_dataset):
    import tensorflow as tf

    loaded = tf.saved_model.load(demo_model)
    right = total = 0
    for features, labels in make_dataset(demo_dataset, mode="eval", batch_size=128):
        ids = loaded.signatures["serving_raw"](**features)["class_ids"]
        right += int(tf.reduce_sum(tf.cast(ids == labels, tf.int32)))
        total += len(labels)
    assert right / total > 0.9


def test_a_label_without_vocabulary_is_refused():
    schema = Schema((Column("x", "float32"), Column("y", "float32", role="label")))
    with pytest.raises(SchemaError, match="vocabulary"):
        savedmodel.label_names(schema)
