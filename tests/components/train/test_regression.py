"""train fits regressors: the task follows from the label, the label is normalised inside the
model (which serves raw values), and RMSE, MAE and R² are measured on the eval split."""

import os

import numpy as np
import pytest

from tfkfp.components.common.data.schema import Schema, SchemaError


def test_a_regressor_serves_raw_values_in_the_labels_units(regression_model,
                                                          regression_dataset):
    import tensorflow as tf

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.model import savedmodel

    meta = savedmodel.load_metadata(regression_model)
    assert meta["task"] == "regression" and meta["labels"] == []
    assert {"eval_rmse", "eval_mae", "eval_r2", "eval_loss"} <= set(meta)
    assert "eval_accuracy" not in meta
    assert not os.path.exists(os.path.join(regression_model, "assets", "labels.txt"))
    loaded = tf.saved_model.load(regression_model)
    raw = loaded.signatures["serving_raw"]
    assert set(raw.structured_outputs) == {"value"}
    errors, labels = [], []
    for features, label in make_dataset(regression_dataset, mode="eval", batch_size=100):
        value = raw(**features)["value"].numpy()
        errors.append(value - label.numpy())
        labels.append(label.numpy())
    errors, labels = np.concatenate(errors), np.concatenate(labels)
    rmse = float(np.sqrt(np.mean(errors ** 2)))
    assert rmse == pytest.approx(meta["eval_rmse"], rel=1e-3)  # the model answers in prices
    assert rmse < 0.25 * labels.std()  # it learned: far better than predicting the mean
    assert meta["eval_r2"] > 0.9


def test_the_report_and_metrics_speak_of_the_regression(regression_dataset, tmp_path):
    from tfkfp.components.train.core import train

    result = train(regression_dataset, str(tmp_path / "m"), epochs=3, hidden_units="16",
                   learning_rate=0.01, loss="huber", target_metric="r2", target_value=0.5)
    metrics = result.metrics()
    assert {"eval_rmse", "eval_mae", "eval_r2", "eval_loss"} <= set(metrics)
    assert result.metadata()["task"] == "regression"
    assert result.classification() is None
    report = result.markdown()
    assert "| eval RMSE |" in report and "time to target r2" in report
    assert "## Predicted against actual (eval split" in report
    assert "data:image/svg+xml;base64," in report
    plotted = result.regression()
    assert plotted["count"] == sum(1 for _ in _eval_rows(regression_dataset))
    assert len(plotted["error_histogram"]["counts"]) == 20


def _eval_rows(dataset):
    from tfkfp.components.common.data.reader import make_dataset

    for _, labels in make_dataset(dataset, mode="eval", batch_size=256):
        yield from labels.numpy()


def test_a_task_that_cannot_work_is_refused_before_any_work(regression_dataset, tmp_path):
    from tfkfp.components.train.core import train

    out = tmp_path / "never"
    with pytest.raises(SchemaError, match="label 'price' \\(float32\\) is a continuous number "
                                          "with no class vocabulary"):
        train(regression_dataset, str(out), task="classification")
    with pytest.raises(SchemaError, match="target_metric 'accuracy' does not apply"):
        train(regression_dataset, str(out), target_metric="accuracy", target_value=0.9)
    assert not out.exists()


def test_a_whole_number_label_can_be_regressed_on(regression_csv, tmp_path):
    from tfkfp.components.common.model import savedmodel
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.train.core import train

    data = str(tmp_path / "rooms")
    shard_tfrecords(regression_csv, data, label="rooms", keys=["house"])
    assert Schema.load(data).label.vocabulary == (1, 2, 3, 4, 5, 6)  # classes by default
    result = train(data, str(tmp_path / "m"), task="regression", epochs=2, hidden_units="8")
    assert result.metadata()["task"] == "regression"
    label = savedmodel.load_schema(str(tmp_path / "m")).label
    assert label.vocabulary is None  # the model reads the label's values, not class ids
    # a constant guess of the mean has RMSE ~1.7 rooms; ids 0-5 would be off by one
    assert result.metrics()["eval_rmse"] < 2.5


def test_warm_start_keeps_the_task(regression_model, regression_dataset, demo_dataset,
                                   tmp_path):
    from tfkfp.components.common.training.config import TrainConfigError
    from tfkfp.components.train.core import train

    result = train(regression_dataset, str(tmp_path / "more"), epochs=1, hidden_units="32",
                   warm_start=regression_model)
    assert result.metrics()["eval_r2"] > 0.8  # continued from a trained model
    with pytest.raises(TrainConfigError, match="it is a regression model; this run is "
                                               "classification"):
        train(demo_dataset, str(tmp_path / "never"), hidden_units="32",
              warm_start=regression_model)


def test_train_refuses_one_class_and_a_constant_target_before_any_work(tmp_path):
    from conftest import write_csv
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.train.core import train

    rows = [[i, i * 0.5, "yes", 4.25] for i in range(40)]
    path = write_csv(tmp_path / "one.csv", ["id", "x", "answer", "price"], rows)
    shard_tfrecords(path, str(tmp_path / "cls"), label="answer", keys=["id"])
    with pytest.raises(SchemaError, match="label 'answer' \\(string\\) has one class only, "
                                          "'yes'"):
        train(str(tmp_path / "cls"), str(tmp_path / "never"))
    shard_tfrecords(path, str(tmp_path / "reg"), label="price", keys=["id", "answer"])
    with pytest.raises(SchemaError, match="label 'price' is 4.25 in all"):
        train(str(tmp_path / "reg"), str(tmp_path / "never"), epochs=1)
    assert not (tmp_path / "never").exists()
