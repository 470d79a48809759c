import os

import numpy as np
import pytest

from tfkfp.components.common import savedmodel
from tfkfp.components.common.reader import make_dataset
from tfkfp.components.common.schema import Column, Schema, SchemaError


def test_both_signatures_give_the_same_predictions(demo_model, demo_dataset):
    import tensorflow as tf

    loaded = tf.saved_model.load(demo_model)
    assert set(loaded.signatures) == {savedmodel.SIGNATURE_EXAMPLES, savedmodel.SIGNATURE_RAW}
    files = tf.io.gfile.glob(os.path.join(demo_dataset, "eval", "*"))
    serialized = next(iter(tf.data.TFRecordDataset(sorted(files)).batch(64)))
    features = tf.io.parse_example(serialized, {c.name: tf.io.FixedLenFeature([], tf.int64)
                                                for c in Schema.load(demo_dataset).features})
    from_examples = loaded.signatures["serving_default"](examples=serialized)
    from_raw = loaded.signatures["serving_raw"](**features)
    np.testing.assert_allclose(from_examples["probabilities"], from_raw["probabilities"],
                               atol=1e-6)
    assert list(from_raw["classes"].numpy()) == [
        str(i).encode() for i in from_raw["class_ids"].numpy()]


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
