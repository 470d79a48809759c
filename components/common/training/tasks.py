"""What a model learns from its label: classes (classification) or a number (regression).

The task follows from the label unless the ``task`` option names it: a float label is a
regression target; an integer or string label with a class vocabulary is classified. The
kinds are common.model.task_kinds' table (whether a model answers classes, its outputs,
losses and target metrics); each has a task object here (``TASK_OBJECTS``) that gives the
model's head, its loss and training metric, the sums and figures of the per-epoch evaluation
and the eval split's report, so the training loop has no task switch of its own.

A regressor's label is normalised inside the model: the head predicts in units of the label's
standard deviation (from the sampled training rows) and rescales to the label's own units, so
the SavedModel serves raw values; the loss is taken in those standard units, so ``huber``'s
threshold and the reported loss mean the same on any scale.
"""

import dataclasses
import math
from typing import ClassVar, Dict, Tuple

import numpy as np

from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.model import savedmodel, task_kinds
from tfkfp.components.common.training.config import HIGHER_IS_BETTER

MAX_VOCABULARY_HINT = "more distinct values than shard_tfrecords keeps as classes"


def resolve(schema: Schema, requested: str = "auto") -> str:
    """The task for the schema's label: ``requested`` when the label supports it, refused
    with the reason when it cannot work."""
    allowed = ("auto", *task_kinds.names())
    if requested not in allowed:
        raise SchemaError(f"task {requested!r} is not one of {', '.join(allowed)}")
    label = schema.label
    if label is None:
        raise SchemaError(f"the schema has no label column, so there is nothing to train on; "
                          f"columns: {schema.names}. Shard the data with label=<column>")
    where = f"label {label.name!r} ({label.dtype}{list(label.shape) if label.shape else ''})"
    if label.shape:
        raise SchemaError(f"{where} holds several values per row; train fits one class or "
                          "one number per row")
    if requested == "regression":
        if label.dtype == "string":
            raise SchemaError(f"{where} is text, which cannot be regressed on; use "
                              "task='classification' (or 'auto'), or shard a numeric label")
        return "regression"
    if requested == "classification" or label.dtype != "float32":
        if not label.vocabulary:
            why = ("is a continuous number with no class vocabulary" if label.dtype == "float32"
                   else f"has {MAX_VOCABULARY_HINT}, too many to classify")
            fix = ("use task='regression' (or 'auto') to predict its value, or shard the "
                   "label as integer or string classes" if label.dtype != "string" else
                   "merge rare classes into fewer")
            raise SchemaError(f"{where} {why}; classification needs class names: {fix}")
        if len(label.vocabulary) == 1:  # always right: eval accuracy 1.0, nothing learned
            raise SchemaError(f"{where} has one class only, {label.vocabulary[0]!r}; a "
                              "classifier needs rows of at least two classes")
        return "classification"
    return "regression"


def training_schema(schema: Schema, task: str) -> Schema:
    """The schema the reader uses for the task: a regressor reads the label's raw values
    (an integer label regressed on drops its class vocabulary)."""
    return schema if task_kinds.kind(task).classes else schema.with_raw_label()


def check_target(task: str, metric: str) -> str:
    """The metric a target is set on: ``metric``, or the task's first (accuracy, rmse)."""
    metrics = task_kinds.kind(task).target_metrics
    return _for_task(task, "target_metric", metric, metrics, f"one of {', '.join(metrics)}")


def _for_task(task: str, setting: str, given: str, allowed, expected: str) -> str:
    """``given``, or the task's first ``allowed`` value where it is empty; refused, naming
    the setting and what is ``expected``, where the task does not take it."""
    chosen = given or allowed[0]
    if chosen not in allowed:
        raise SchemaError(f"{setting} {given!r} does not apply to {task}; expected {expected}")
    return chosen


def reached(metric: str, value: float, target: float) -> bool:
    return value >= target if HIGHER_IS_BETTER[metric] else value <= target


def label_moments(labels: np.ndarray) -> Tuple[float, float]:
    """Mean and standard deviation of the sampled labels (1 for a constant label)."""
    values = np.asarray(labels, np.float64).reshape(-1)
    if not len(values):
        return 0.0, 1.0
    std = float(values.std())
    return float(values.mean()), std if std > 0 and math.isfinite(std) else 1.0


@dataclasses.dataclass(frozen=True)
class Classification:
    num_classes: int
    name: str = "classification"
    samples_labels: ClassVar[bool] = False  # make needs no sample of training labels

    @classmethod
    def build(cls, schema: Schema, labels: np.ndarray | None, loss: str) -> "Classification":
        return cls(len(schema.label.vocabulary))

    def head(self, x):
        import tf_keras

        return tf_keras.layers.Dense(self.num_classes, activation="softmax", dtype="float32",
                                     name="probabilities")(x)

    def outputs(self) -> int:
        return self.num_classes

    def compile_args(self) -> Dict:
        return {"loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}

    def eval_sums(self, outputs, labels):
        """Loss, right answers and count of one batch (summed over the eval split)."""
        import tensorflow as tf
        import tf_keras

        probs = tf.cast(outputs, tf.float32)
        labels = tf.cast(labels, tf.int64)
        losses = tf_keras.losses.sparse_categorical_crossentropy(labels, probs)
        right = tf.cast(tf.equal(tf.argmax(probs, -1), labels), tf.float32)
        return tf.reduce_sum(losses), tf.reduce_sum(right), tf.cast(tf.size(labels), tf.float32)

    def eval_figures(self, totals) -> Dict[str, float]:
        loss, right, count = totals
        return {"val_loss": loss / max(count, 1), "val_accuracy": right / max(count, 1)}

    def eval_report(self, evaluation, schema: Schema) -> Dict:
        """The eval split's confusion matrix (and ROC curve) for the KFP UI."""
        return evaluation.classification(savedmodel.label_names(schema))


@dataclasses.dataclass(frozen=True)
class Regression:
    mean: float
    std: float
    loss_name: str = "mse"
    name: str = "regression"
    samples_labels: ClassVar[bool] = True  # the label's moments come from a sample

    @classmethod
    def build(cls, schema: Schema, labels: np.ndarray | None, loss: str) -> "Regression":
        _check_spread(schema.label.name, labels)
        return cls(*label_moments(labels), loss_name=loss)

    def head(self, x):
        import tf_keras

        standard = tf_keras.layers.Dense(1, dtype="float32", name="standardised_value")(x)
        return tf_keras.layers.Rescaling(self.std, offset=self.mean, dtype="float32",
                                         name="value")(standard)

    def outputs(self) -> int:
        return 1

    def compile_args(self) -> Dict:
        import tf_keras

        return {"loss": self.loss_fn(),
                "metrics": [tf_keras.metrics.RootMeanSquaredError(name="rmse")]}

    def loss_fn(self):
        """Per-example loss in units of the label's standard deviation."""
        import tensorflow as tf
        import tf_keras

        base = {"mse": tf_keras.losses.mean_squared_error, "huber": tf_keras.losses.huber
                }[self.loss_name]
        scale = self.std

        def standardised_loss(y_true, y_pred):
            y_pred = tf.reshape(tf.cast(y_pred, tf.float32), [-1, 1])
            y_true = tf.reshape(tf.cast(y_true, tf.float32), [-1, 1])
            return base(y_true / scale, y_pred / scale)

        return standardised_loss

    def eval_sums(self, outputs, labels):
        """Loss, squared and absolute errors, the (centred) labels' sum and square sum, and
        the count of one batch: RMSE, MAE and R² follow from their totals in one pass."""
        import tensorflow as tf

        predicted = tf.reshape(tf.cast(outputs, tf.float32), [-1])
        actual = tf.reshape(tf.cast(labels, tf.float32), [-1])
        error = predicted - actual
        centred = actual - self.mean  # about the sampled mean: no cancellation in the spread
        return (tf.reduce_sum(self.loss_fn()(actual, predicted)), tf.reduce_sum(error * error),
                tf.reduce_sum(tf.abs(error)), tf.reduce_sum(centred),
                tf.reduce_sum(centred * centred), tf.cast(tf.size(actual), tf.float32))

    def eval_figures(self, totals) -> Dict[str, float]:
        loss, squared, absolute, total, total_squared, count = totals
        count = max(count, 1)
        spread = total_squared - total * total / count  # the sum of squares about the mean
        return {"val_loss": loss / count, "val_rmse": math.sqrt(max(squared, 0.0) / count),
                "val_mae": absolute / count,
                "val_r2": 1.0 - squared / spread if spread > 0 else 0.0}

    def eval_report(self, evaluation, schema: Schema) -> Dict:
        """Predicted against actual values, for the report's plots."""
        return evaluation.regression()


# The task object of each kind in common.model.task_kinds' table.
TASK_OBJECTS = {task.name: task for task in (Classification, Regression)}


def check_loss(task: str, loss: str) -> str:
    """The loss for the task: ``loss``, or the task's own (crossentropy, mse)."""
    allowed = task_kinds.kind(task).losses
    return _for_task(task, "loss", loss, allowed, " or ".join(allowed))


def make(task: str, schema: Schema, labels: np.ndarray | None, loss: str = ""):
    """The task object for a resolved task; ``labels``: sampled training labels (regression)."""
    return TASK_OBJECTS[task].build(schema, labels, check_loss(task, loss))


def _check_spread(name: str, labels: np.ndarray | None) -> None:
    """A constant label leaves a regressor nothing to learn (and no scale to learn it in)."""
    values = np.asarray(labels if labels is not None else [], np.float64).reshape(-1)
    if len(values) and values.min() == values.max():
        raise SchemaError(f"label {name!r} is {values[0]:g} in all {len(values):,} sampled "
                          "training rows (zero variance), so a regressor has nothing to learn; "
                          "give it rows whose label varies (if only the first rows are alike, "
                          "shuffle the input before sharding)")
