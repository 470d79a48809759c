"""The task kinds are one table (common.model.task_kinds): the SavedModel contract, the
training request's checks and the training tasks read it, and the training loop asks the task
object for its report instead of switching on the task's name."""

import json

import pytest

from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.common.model import savedmodel, task_kinds
from tfkfp.components.common.training import config as train_config
from tfkfp.components.common.training import tasks


def test_the_table_gives_every_reader_the_kinds_as_before():
    assert task_kinds.names() == savedmodel.TASKS == ("classification", "regression")
    assert train_config.TASKS == ("auto", "classification", "regression")
    assert train_config.REGRESSION_LOSSES == ("mse", "huber")
    assert train_config.TARGET_METRICS == {"classification": ("accuracy", "loss"),
                                           "regression": ("rmse", "mae", "r2", "loss")}
    assert savedmodel.OUTPUTS == ("probabilities", "class_ids", "classes")
    assert savedmodel.REGRESSION_OUTPUTS == ("value",)
    assert savedmodel.task_of_outputs(["value"]) == "regression"
    assert savedmodel.task_of_outputs(["classes", "probabilities", "class_ids"]) == \
        "classification"
    assert savedmodel.task_of_outputs(["logits"]) == "classification"


def test_every_kind_has_a_task_object():
    assert set(tasks.TASK_OBJECTS) == set(task_kinds.names())


def test_the_checks_keep_their_words():
    with pytest.raises(train_config.TrainConfigError, match=r"^task 'x' is not known; expected "
                       r"one of auto, classification, regression$"):
        train_config.check_fields(train_config.TrainConfig("d", "m", task="x"))
    with pytest.raises(train_config.TrainConfigError, match=r"^loss 'x' is not known; expected "
                       r"one of crossentropy, mse, huber$"):
        train_config.check_fields(train_config.TrainConfig("d", "m", loss="x"))
    with pytest.raises(SchemaError, match=r"^loss 'mse' does not apply to classification; "
                       r"expected crossentropy$"):
        tasks.check_loss("classification", "mse")
    assert tasks.check_loss("regression", "") == "mse"
    assert tasks.check_target("regression", "") == "rmse"


def test_one_entry_adds_a_kind(monkeypatch, tmp_path):
    monkeypatch.setitem(task_kinds.TASK_KINDS, "ranking", task_kinds.TaskKind(
        "ranking", classes=False, outputs=("score",), losses=("pairwise",),
        target_metrics=("ndcg", "loss"), summary="an order of the rows"))

    class Ranking:
        name = "ranking"
        samples_labels = False

        @classmethod
        def build(cls, schema, labels, loss):
            return cls()

        def eval_report(self, evaluation, schema):
            return {"ndcg": 1.0}

    monkeypatch.setitem(tasks.TASK_OBJECTS, "ranking", Ranking)
    train_config.check_fields(train_config.TrainConfig("d", "m", task="ranking",
                                                       loss="pairwise"))
    assert tasks.check_loss("ranking", "") == "pairwise"
    assert tasks.check_target("ranking", "") == "ndcg"
    made = tasks.make("ranking", None, None)
    assert made.eval_report(None, None) == {"ndcg": 1.0}
    assert savedmodel.task_of_outputs(["score"]) == "ranking"
    (tmp_path / savedmodel.METADATA_FILE).write_text(json.dumps({"task": "ranking"}))
    assert savedmodel.recorded_task(str(tmp_path)) == "ranking"
    assert savedmodel.load_labels(str(tmp_path)) == []  # answers no classes, no labels.txt
