"""Both record layouts through train and batch_predict: a Dataset sharded one feature per
column (as every Dataset was before the packed layout) still trains and predicts, and a
model trained on packed shards serves Examples with one feature per column."""

import json
import os

import numpy as np
import pytest

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.schema import Schema
from tfkfp.components.train.core import train


@pytest.fixture
def columns_dataset(demo_columns_dataset):
    return demo_columns_dataset


def predictions(folder):
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("predictions-"):
            rows += [json.loads(line) for line in open(os.path.join(folder, name))]
    return {r["id"]: (r["class_id"], r["score"]) for r in rows}


def test_one_feature_per_column_still_trains_and_predicts(columns_dataset, demo_dataset,
                                                          tmp_path):
    assert Schema.load(columns_dataset).layout == "columns"
    assert Schema.load(demo_dataset).layout == "packed"
    result = train(columns_dataset, str(tmp_path / "model"), epochs=3, hidden_units="64",
                   seed=1)
    assert result.figures["eval_accuracy"] > 0.8
    model = result.model_dir
    batch_predict(model, columns_dataset, str(tmp_path / "columns"))
    batch_predict(model, demo_dataset, str(tmp_path / "packed"))  # the same rows, packed
    on_columns, on_packed = predictions(tmp_path / "columns"), predictions(tmp_path / "packed")
    assert len(on_columns) == 1797 and on_columns.keys() == on_packed.keys()
    assert [on_columns[k][0] for k in on_columns] == [on_packed[k][0] for k in on_columns]
    np.testing.assert_allclose([on_columns[k][1] for k in on_columns],
                               [on_packed[k][1] for k in on_columns], rtol=1e-6)
    same_rows_both_layouts(model, columns_dataset, demo_dataset)


def same_rows_both_layouts(model, columns_dataset, packed_dataset):
    """serving_default gives the same answers for eval rows sent either way."""
    import tensorflow as tf

    serving = tf.saved_model.load(model).signatures["serving_default"]
    batches = []
    for dataset in (columns_dataset, packed_dataset):
        files = sorted(tf.io.gfile.glob(os.path.join(dataset, "eval", "*")))
        batches.append(next(iter(tf.data.TFRecordDataset(files).batch(50))))
    per_column, packed = batches
    assert "pixel_0" in tf.train.Example.FromString(per_column[0].numpy()).features.feature
    assert "pixel_0" not in tf.train.Example.FromString(packed[0].numpy()).features.feature
    from_columns = serving(examples=per_column)
    from_packed = serving(examples=packed)  # the same eval rows in the same order
    np.testing.assert_array_equal(from_columns["class_ids"], from_packed["class_ids"])
    np.testing.assert_allclose(from_columns["probabilities"], from_packed["probabilities"],
                               atol=1e-6)


def test_serving_default_takes_per_column_examples_after_packed_training(
        columns_dataset, demo_dataset, tmp_path):
    result = train(demo_dataset, str(tmp_path / "model"), epochs=1, hidden_units="32", seed=2)
    same_rows_both_layouts(result.model_dir, columns_dataset, demo_dataset)
