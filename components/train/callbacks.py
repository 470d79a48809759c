"""Keras callbacks for the training loop: timing, per-epoch evaluation, a NaN guard and
epoch checkpoints that let a killed run resume where it stopped."""

import json
import math
import time
from typing import Any, Dict, List

import tf_keras

from tfkfp.components.common.platform import progress, uris
from tfkfp.components.common.training.tasks import reached
from tfkfp.components.train.errors import TrainingDiverged


class EpochTimer(tf_keras.callbacks.Callback):
    """Wall time of each epoch, from which throughput and mean step time follow."""

    def __init__(self, steps_per_epoch: int, global_batch: int):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.global_batch = global_batch
        self.epoch_seconds: List[float] = []
        self.started = time.perf_counter()
        self._epoch_start = 0.0

    def on_train_begin(self, logs=None):
        self.started = time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(time.perf_counter() - self._epoch_start)

    def figures(self) -> Dict[str, float | None]:
        # The first epoch pays for tracing and compiling; leave it out when there are more.
        timed = self.epoch_seconds[1:] or self.epoch_seconds
        if not timed:  # nothing trained in this run (resumed after the last epoch)
            return {"examples_per_second": None, "mean_step_ms": None}
        seconds = sum(timed) / len(timed)
        return {"examples_per_second": self.steps_per_epoch * self.global_batch / seconds,
                "mean_step_ms": 1000.0 * seconds / self.steps_per_epoch}


class Evaluation(tf_keras.callbacks.Callback):
    """The task's figures on the eval split after each epoch (adds ``val_loss`` and
    ``val_accuracy``, or ``val_rmse``, ``val_mae`` and ``val_r2``, to the epoch logs), and
    the time the target (``val_<metric>`` reaching ``target``, in the metric's own
    direction) was first reached."""

    def __init__(self, dataset, task, timer: EpochTimer, target_metric: str = "",
                 target: float = 0.0):
        super().__init__()
        self.dataset = dataset
        self.task = task
        self.timer = timer
        self.target_metric = target_metric
        self.target = target
        self.seconds_to_target: float | None = None
        self._step = None

    def evaluate(self) -> Dict[str, float]:
        import tensorflow as tf

        if self._step is None:
            self._step = tf.function(lambda features, labels: self.task.eval_sums(
                self.model(features, training=False), labels))
        totals = None
        for features, labels in self.dataset:
            sums = [float(value) for value in self._step(features, labels)]
            totals = sums if totals is None else [a + b for a, b in zip(totals, sums)]
        if totals is None:  # train checks the split has records before any work
            raise ValueError("the eval split gave no examples to evaluate on")
        return self.task.eval_figures(totals)

    def predictions(self):
        """(labels, model outputs) of each eval batch, as NumPy arrays."""
        import tensorflow as tf

        predict = tf.function(lambda features: tf.cast(self.model(features, training=False),
                                                        tf.float32))
        for features, labels in self.dataset:
            yield labels.numpy(), predict(features).numpy()

    def classification(self, classes) -> Dict[str, Any]:
        """Confusion matrix (and, for two classes, ROC curve) of the model on the eval split,
        as common.model.classification summarises them for KFP's ClassificationMetrics."""
        from tfkfp.components.common.charts.scores import ScoreCurves
        from tfkfp.components.common.model.classification import Accumulator

        accumulator, curves = Accumulator(classes), ScoreCurves(classes)
        for labels, probs in self.predictions():
            accumulator.add(labels, probs)
            curves.add(labels, probs)  # ROC and precision-recall per class, for the page
        return {**accumulator.summary(), "curves": curves.summary()}

    def regression(self) -> Dict[str, Any]:
        """Predicted against actual values on the eval split (common.model.regression's summary,
        for the plot)."""
        from tfkfp.components.common.model.regression import Accumulator

        accumulator = Accumulator()
        for labels, values in self.predictions():
            accumulator.add(labels, values)
        return accumulator.summary()

    def on_epoch_end(self, epoch, logs=None):
        figures = self.evaluate()
        if logs is not None:
            logs.update(figures)
        value = figures.get(f"val_{self.target_metric}")
        if (self.target and self.seconds_to_target is None and value is not None
                and reached(self.target_metric, value, self.target)):
            self.seconds_to_target = time.perf_counter() - self.timer.started


class EpochProgress(tf_keras.callbacks.Callback):
    """A progress line per epoch (common.platform.progress): the training loss and the first
    eval figure but the loss, which Evaluation, listed before this, adds to the epoch's logs."""

    def __init__(self, epochs: int, initial_epoch: int):
        super().__init__()
        self.epochs, self.initial_epoch = epochs, initial_epoch
        self.started = time.monotonic()

    def on_train_begin(self, logs=None):
        self.started = time.monotonic()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        evals = [k for k in logs if k.startswith("val_") and k != "val_loss"] or ["val_loss"]
        shown = ["loss", evals[0]]
        progress.report("training", epoch + 1, "epochs", time.monotonic() - self.started,
                        self.epochs, {k: f"{float(logs[k]):.4g}" for k in shown if k in logs},
                        counted_from=self.initial_epoch)


class NanGuard(tf_keras.callbacks.Callback):
    """Stops training at the first NaN or infinite loss, naming the epoch and step and the
    checkpoint a rerun resumes from (``checkpoint_dir`` is None when checkpoints are not
    kept beyond the run)."""

    def __init__(self, checkpoint_dir: str | None):
        super().__init__()
        self.checkpoint_dir = checkpoint_dir
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        self._check(logs, f"the end of epoch {epoch + 1}")

    def _check(self, logs, where: str) -> None:
        loss = (logs or {}).get("loss")
        if isinstance(loss, (int, float)) and not math.isfinite(loss):
            raise TrainingDiverged(
                f"the training loss became {loss} at {where}; training stopped. "
                f"{self._kept()} Lower learning_rate or check the input data for extreme "
                "values")

    def _kept(self) -> str:
        import tensorflow as tf

        latest = self.checkpoint_dir and tf.train.latest_checkpoint(self.checkpoint_dir)
        if not latest:
            return "No checkpoint was kept (set checkpoint_dir to keep one per epoch)."
        return f"The last good checkpoint is kept: {latest}."


class StepNanGuard(NanGuard):
    """NanGuard checking every step (the parameter-server strategy allows epoch hooks only)."""

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs, f"epoch {self._epoch + 1}, step {batch + 1}")


class EpochCheckpoint(tf_keras.callbacks.Callback):
    """Saves model, optimizer and the count of completed epochs after every epoch, with the
    per-epoch history beside them (so a resumed run reports the whole curve)."""

    def __init__(self, manager, epoch_variable, history: Dict[str, List[float]],
                 history_path: str | None):
        super().__init__()
        self.manager = manager
        self.epoch_variable = epoch_variable
        self.history = history
        self.history_path = history_path

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            if isinstance(value, (int, float)):
                self.history.setdefault(key, []).append(float(value))
        # History first: a kill between the two writes then leaves a history one epoch
        # ahead (load_history trims it to the checkpoint), never one behind.
        if self.history_path:
            uris.makedirs(self.history_path.rpartition("/")[0] or ".")
            uris.write_text_atomic(self.history_path, json.dumps(self.history) + "\n")
        self.epoch_variable.assign(epoch + 1)
        self.manager.save(checkpoint_number=epoch + 1)


def load_history(path: str, epochs: int) -> Dict[str, List[float]]:
    """The first ``epochs`` entries of a saved history (none when there is no file)."""
    if not epochs or not uris.exists(path):
        return {}
    return {k: v[:epochs] for k, v in json.loads(uris.read_text(path)).items()}
