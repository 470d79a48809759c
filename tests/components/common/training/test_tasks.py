"""What a model learns from its label: the task follows the label unless named, a label no
task can use is refused with the reason, targets and losses fit the task, and a regressor's
loss and eval figures are in the label's units."""

import numpy as np
import pytest

from tfkfp.components.common.data.schema import Column, Schema, SchemaError
from tfkfp.components.common.training import tasks


def _schema(label: Column) -> Schema:
    return Schema(columns=(Column("x", "float32"), label))


@pytest.mark.parametrize("label, requested, task", [
    (Column("y", "float32", role="label"), "auto", "regression"),
    (Column("y", "string", role="label", vocabulary=("a", "b")), "auto", "classification"),
    (Column("y", "int64", role="label", vocabulary=(1, 2, 3)), "auto", "classification"),
    (Column("y", "int64", role="label", vocabulary=(1, 2, 3)), "regression", "regression"),
    (Column("y", "int64", role="label"), "regression", "regression"),
])
def test_the_task_follows_the_label_unless_named(label, requested, task):
    assert tasks.resolve(_schema(label), requested) == task


@pytest.mark.parametrize("label, requested, words", [
    (Column("y", "float32", role="label"), "classification",
     ["'y' (float32)", "continuous", "task='regression'"]),
    (Column("y", "string", role="label", vocabulary=("a",)), "regression",
     ["'y' (string)", "text"]),
    (Column("y", "int64", role="label"), "auto", ["too many to classify", "task='regression'"]),
    (Column("y", "float32", (2,), role="label"), "auto", ["several values per row"]),
    (Column("y", "float32", role="label"), "ranking", ["task 'ranking'", "regression"]),
    (Column("y", "string", role="label", vocabulary=("yes",)), "auto",
     ["'y' (string)", "one class only, 'yes'", "at least two classes"]),
    (Column("y", "int64", role="label", vocabulary=(7,)), "classification",
     ["'y' (int64)", "one class only, 7"]),
])
def test_a_task_the_label_cannot_support_is_refused_with_the_reason(label, requested, words):
    with pytest.raises(SchemaError) as err:
        tasks.resolve(_schema(label), requested)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_targets_work_in_either_direction_and_fit_the_task():
    assert tasks.reached("rmse", 4.9, 5.0) and not tasks.reached("rmse", 5.1, 5.0)
    assert tasks.reached("r2", 0.91, 0.9) and not tasks.reached("mae", 2.0, 1.0)
    assert tasks.check_target("regression", "") == "rmse"
    assert tasks.check_target("classification", "") == "accuracy"
    with pytest.raises(SchemaError, match="target_metric 'accuracy' does not apply to "
                                          "regression; expected one of rmse, mae, r2, loss"):
        tasks.check_target("regression", "accuracy")
    with pytest.raises(SchemaError, match="loss 'huber' does not apply to classification"):
        tasks.check_loss("classification", "huber")


def test_the_regression_loss_is_in_units_of_the_label_spread():
    import tensorflow as tf

    actual = tf.constant([1000.0, 3000.0, 5000.0])
    predicted = tf.constant([[1500.0], [3000.0], [4000.0]])
    for std in (1.0, 1000.0):
        loss = tasks.Regression(0.0, std).loss_fn()(actual, predicted).numpy()
        want = ((np.array([1000, 3000, 5000]) - np.array([1500, 3000, 4000])) / std) ** 2
        np.testing.assert_allclose(loss, want, rtol=1e-5)
    huber = tasks.Regression(0.0, 1000.0, "huber").loss_fn()(actual, predicted).numpy()
    np.testing.assert_allclose(huber, [0.5 * 0.5 ** 2, 0.0, 1.0 - 0.5], rtol=1e-5)


def test_eval_figures_from_batch_sums_equal_the_direct_computation():
    from tfkfp.components.common.model.regression import summarise

    rng = np.random.default_rng(3)
    actual = rng.normal(5000.0, 30.0, 500)  # a large mean: the spread must not cancel
    predicted = actual + rng.normal(0, 5.0, 500)
    task = tasks.Regression(*tasks.label_moments(actual[:100]))
    totals = None
    for start in range(0, 500, 128):  # summed batch by batch, as the eval callback does
        sums = [float(v) for v in task.eval_sums(predicted[start:start + 128, None],
                                                 actual[start:start + 128])]
        totals = sums if totals is None else [a + b for a, b in zip(totals, sums)]
    figures, direct = task.eval_figures(totals), summarise(actual, predicted)
    for name in ("rmse", "mae", "r2"):
        assert figures[f"val_{name}"] == pytest.approx(direct[name], rel=1e-4)
    assert direct["r2"] > 0.9 and direct["count"] == 500


def test_label_moments_of_a_constant_label_keep_a_unit_scale():
    assert tasks.label_moments(np.full(10, 7.0)) == (7.0, 1.0)
    mean, std = tasks.label_moments(np.array([1.0, 3.0]))
    assert (mean, std) == (2.0, 1.0)


@pytest.mark.parametrize("labels", [np.full(10, 7.5), np.full(3, 2, np.int64)])
def test_a_regression_label_without_spread_is_refused_naming_its_value(labels):
    schema = _schema(Column("y", "float32", role="label"))
    with pytest.raises(SchemaError, match=f"label 'y' is {labels[0]:g} in all {len(labels)} "
                                          "sampled training rows \\(zero variance\\)"):
        tasks.make("regression", schema, labels)
    assert tasks.make("regression", schema, np.array([1.0, 3.0])).std == 1.0
