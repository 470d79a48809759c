"""Training and prediction on a table with gaps, Unicode strings and a string label."""

import json
import os

import numpy as np
import pytest

from conftest import messy_rows, write_csv, write_messy_csv
from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.common.training.models import gap_free_moments
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.train.core import train


@pytest.fixture(scope="module")
def messy_model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("messy")
    path = write_messy_csv(tmp / "messy.csv", messy_rows(800))
    shard_tfrecords(path, str(tmp / "ds"), label="label", keys=["id"])
    result = train(str(tmp / "ds"), str(tmp / "model"), epochs=6, hidden_units="16",
                   learning_rate=0.01, batch_size=32)
    return tmp, result


def test_a_table_with_gaps_and_unicode_strings_trains(messy_model):
    _, result = messy_model
    assert np.isfinite(result.history["loss"]).all()
    assert result.figures["eval_accuracy"] > 0.7


def test_a_gap_predicts_as_the_training_mean_of_its_column(messy_model):
    import tensorflow as tf

    from tfkfp.components.common.data.reader import make_dataset

    tmp, result = messy_model
    xs = np.concatenate([f["x"].numpy() for f, _ in make_dataset(
        str(tmp / "ds"), mode="train", batch_size=256, shuffle=False)])
    mean = float(gap_free_moments(xs)[0][0])
    serve = tf.saved_model.load(result.model_dir).signatures["serving_raw"]

    def probabilities(x, colour):
        return serve(x=tf.constant([x], tf.float32), y=tf.constant([0.5]),
                     colour=tf.constant([colour]), count=tf.constant([2.0]),
                     )["probabilities"].numpy()

    np.testing.assert_allclose(probabilities(float("nan"), ""), probabilities(mean, ""),
                               atol=1e-6)
    # An empty string and a string never seen in training both fall out of vocabulary.
    np.testing.assert_allclose(probabilities(0.1, ""), probabilities(0.1, "jamais vu"),
                               atol=1e-6)


def test_batch_prediction_of_raw_rows_with_gaps(messy_model):
    from tfkfp.components.batch_predict.core import batch_predict

    tmp, result = messy_model
    rows = [r[:-1] for r in messy_rows(50, seed=5)]
    assert any(r[1] == "" for r in rows) and any(r[3] == "" for r in rows)  # gaps to predict
    path = tmp / "new.csv"
    write_messy_csv(path, [r + ["?"] for r in rows])  # the label column is ignored
    out = str(tmp / "predictions")
    predicted = batch_predict(result.model_dir, str(path), out, keys=["id"])
    assert (predicted.inputs, predicted.errors) == (50, 0)
    lines = [json.loads(line) for name in sorted(os.listdir(out)) if name.endswith(".jsonl")
             for line in open(os.path.join(out, name))]
    assert sorted(r["id"] for r in lines) == list(range(50))
    assert all(r["class"] in ("yes", "no") and 0.5 <= r["score"] <= 1 for r in lines)


def test_an_empty_eval_split_is_refused_naming_eval_fraction(tmp_path):
    path = write_csv(tmp_path / "three.csv", ["id", "x", "label"],
                     [[1, 0.5, "a"], [2, 1.5, "b"], [3, 2.5, "a"]])
    shard_tfrecords(path, str(tmp_path / "ds"), label="label", keys=["id"])
    with pytest.raises(SchemaError, match="the eval split has no records.*eval_fraction"):
        train(str(tmp_path / "ds"), str(tmp_path / "model"))
    assert not os.path.exists(tmp_path / "model")
