"""Every record layout through train and batch_predict: a Dataset sharded one feature per
column (as every Dataset was before the packed layout) still trains and predicts, a model
trained on packed or blocks shards serves Examples with one feature per column, and
blocks shards predict as packed ones do."""

import json
import os

import numpy as np
import pytest

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.vertex import check_record_layout
from tfkfp.components.common.data.schema import Schema
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


def test_blocks_train_and_predict_as_packed_shards_do(demo_blocks_dataset, demo_dataset,
                                                      columns_dataset, tmp_path):
    schema = Schema.load(demo_blocks_dataset)
    assert schema.layout == "blocks" and schema.block_rows == 100
    result = train(demo_blocks_dataset, str(tmp_path / "model"), epochs=3, hidden_units="64",
                   seed=1)
    assert result.figures["eval_accuracy"] > 0.8
    model = result.model_dir
    batch_predict(model, demo_blocks_dataset, str(tmp_path / "blocks"), predict_batch_size=256)
    batch_predict(model, demo_dataset, str(tmp_path / "packed"))
    on_blocks, on_packed = predictions(tmp_path / "blocks"), predictions(tmp_path / "packed")
    assert len(on_blocks) == 1797 and on_blocks.keys() == on_packed.keys()
    assert [on_blocks[k][0] for k in on_blocks] == [on_packed[k][0] for k in on_blocks]
    np.testing.assert_allclose([on_blocks[k][1] for k in on_blocks],
                               [on_packed[k][1] for k in on_blocks], rtol=1e-6)
    same_rows_both_layouts(model, columns_dataset, demo_dataset)  # one row per Example


def test_a_block_that_does_not_parse_is_one_error_naming_it(demo_blocks_dataset, demo_model,
                                                            tmp_path):
    import shutil

    import tensorflow as tf

    data = tmp_path / "data"
    shutil.copytree(demo_blocks_dataset, data)
    shard = sorted((data / "eval").iterdir())[0]
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(shard))]
    example = tf.train.Example.FromString(records[0])
    del example.features.feature["id"].int64_list.value[-1]  # one id short of its rows
    records[0] = example.SerializeToString()
    pattern = tmp_path / "bad-00000.tfrecord"
    with tf.io.TFRecordWriter(str(pattern)) as writer:
        for record in records:
            writer.write(record)
    shutil.copy(data / "schema.json", tmp_path / "schema.json")
    result = batch_predict(demo_model, str(pattern), str(tmp_path / "out"),
                           schema_uri=str(tmp_path / "schema.json"), predict_batch_size=200,
                           max_error_fraction=1.0)  # a block's rows are one error row here
    errors = [json.loads(line) for line in open(tmp_path / "out" / "errors-00000-of-00001.jsonl")]
    assert len(errors) == 1 and errors[0]["record"] == 0
    reason = errors[0]["reason"]  # the pixels hold 64 values for each of 100 rows, id 99
    assert "a block record whose features disagree on its row count" in reason
    assert "need y (64 a row)" in reason and "[6400]" in reason and "[6336]" in reason
    rows = sum(len(tf.train.Example.FromString(r).features.feature["label"].int64_list.value)
               for r in records[1:])
    assert result.predictions == rows  # every row of the other blocks was predicted


def test_vertex_refuses_blocks_shards_before_uploading(demo_blocks_dataset, demo_dataset):
    pattern = os.path.join(demo_blocks_dataset, "eval", "*.tfrecord")
    with pytest.raises(PredictInputError, match="is sharded in the 'blocks' layout .* Vertex "
                                                "sends each record to serving_default"):
        check_record_layout([pattern])
    check_record_layout([os.path.join(demo_dataset, "eval", "*.tfrecord"), demo_dataset])
