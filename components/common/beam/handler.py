"""The suite's RunInference model handler: a tfkfp SavedModel or TFLite bundle predicting
inside a Beam job as batch_predict predicts in a step.

Rows reach it encoded (``rows.RowEncoder``, or a batch_predict reader's parsed rows), one
dict of column -> array per row; it stacks a batch, calls the model once and answers one
``RowPrediction`` per row (a classifier's best classes and scores, or a regressor's value)
in batch_predict's fields. A row the model fails on is found by halving the batch and
answered with a ``RowFailure`` naming why, so one bad row never fails its batch.

The model is loaded once per worker process (a process-wide cache, whatever Beam does with
its DoFns per bundle) and counted: the ``model_loads`` counter of the ``tfkfp`` namespace
rises once per load. Batching is RunInference's own (``min/max_batch_size``,
``max_batch_duration_secs`` for streams).
"""

import dataclasses
import threading
from typing import Any, Dict, Iterable, List, NamedTuple, Sequence, Tuple

import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import KeyedModelHandler, ModelHandler, PredictionResult

from tfkfp.components.common.beam.rows import stack_rows
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.model.matching import feature_columns
from tfkfp.components.common.model.predictor import Predictor, load_predictor
from tfkfp.components.common.model.ranking import check_outputs, check_top_k, top_k_of
from tfkfp.components.common.platform.halving import split_failures

NAMESPACE = "tfkfp"  # every counter the suite's Beam jobs report


class RowPrediction(NamedTuple):
    """One row's answer: a classifier's k best class ids, names and scores (best first), or a
    regressor's value; ``version``: the model version an endpoint answered with ("": the
    job's own model). A tuple: a job makes one a row, so it must be cheap to make."""

    class_ids: Tuple[int, ...] = ()
    classes: Tuple[str, ...] = ()
    scores: Tuple[float, ...] = ()
    value: float | None = None
    version: str = ""

    def fields(self) -> Dict[str, Any]:
        """batch_predict's prediction fields: class, class_id, score (and top_classes,
        top_scores past one class), or value."""
        if self.value is not None:
            return {"value": self.value}
        out = {"class": self.classes[0], "class_id": self.class_ids[0],
               "score": self.scores[0]}
        if len(self.classes) > 1:
            out.update(top_classes=list(self.classes), top_scores=list(self.scores))
        return out


@dataclasses.dataclass(frozen=True)
class RowFailure:
    """A row the model could not predict, and why."""

    reason: str


class _Loaded:
    """A process's loaded model: its columns, and a lock where calls must not overlap (a
    TFLite interpreter is not thread-safe; a SavedModel's function is)."""

    def __init__(self, predictor: Predictor):
        self.predictor = predictor
        self.columns: List[Column] = feature_columns(predictor, predictor.schema,
                                                     predictor.uri) if predictor.schema \
            else [Column(n, s.dtype, s.shape) for n, s in predictor.inputs.items()]
        self.lock = threading.Lock() if predictor.kind == "tflite" else None
        self.reported = False  # whether this load was counted in model_loads yet


_CACHE: Dict[Tuple[str, str, int], _Loaded] = {}
_CACHE_LOCK = threading.Lock()
_LOADS = {"count": 0}  # loads in this process (tests and benchmarks read it)


def loads_in_process() -> int:
    return _LOADS["count"]


def _load(model_uri: str, labels_uri: str, threads: int) -> _Loaded:
    key = (model_uri, labels_uri, threads)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _Loaded(load_predictor(model_uri, labels_uri, threads))
            _LOADS["count"] += 1
        return _CACHE[key]


class TfkfpModelHandler(ModelHandler[Dict[str, np.ndarray], Any, _Loaded]):
    """RunInference with a tfkfp model. Wrap it in ``KeyedModelHandler`` to carry keys.

    Args:
        model_uri: a tfkfp SavedModel folder, a TFLite bundle folder or a ``.tflite`` file
            (local, ``gs://``; ``s3://`` where the suite's object-store access is set up).
        top_k: a classifier's best classes per row.
        labels_uri: class names for a bare ``.tflite`` file.
        threads: TensorFlow or LiteRT threads (0: one per CPU).
        min_batch_size, max_batch_size, max_batch_duration_secs: RunInference's batching.
    """

    def __init__(self, model_uri: str, top_k: int = 1, labels_uri: str = "", threads: int = 0,
                 min_batch_size: int = 1, max_batch_size: int = 1024,
                 max_batch_duration_secs: int | None = None):
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size,
                         max_batch_duration_secs=max_batch_duration_secs)
        self.model_uri, self.top_k = model_uri, top_k
        self.labels_uri, self.threads = labels_uri, threads
        self._loads = Metrics.counter(NAMESPACE, "model_loads")
        self._failed = Metrics.counter(NAMESPACE, "prediction_failures")

    def load_model(self) -> _Loaded:
        loaded = _load(self.model_uri, self.labels_uri, self.threads)
        check_top_k(loaded.predictor, self.top_k)
        return loaded

    def run_inference(self, batch: Sequence[Dict[str, np.ndarray]], model: _Loaded,
                      inference_args: Dict[str, Any] | None = None
                      ) -> Iterable[PredictionResult]:
        if not model.reported:  # counted here: a DoFn's setup has no metrics context
            model.reported = True
            self._loads.inc()
        answers: List[Any] = [None] * len(batch)
        good, bad = split_failures(lambda lo, hi: self._predict(batch[lo:hi], model),
                                   len(batch))
        for lo, _hi, predictions in good:
            answers[lo:lo + len(predictions)] = predictions
        for index, err in bad:
            answers[index] = RowFailure(f"prediction failed: {' '.join(str(err).split())}")
        if bad:
            self._failed.inc(len(bad))
        return [PredictionResult(row, answer, self.model_uri)
                for row, answer in zip(batch, answers)]

    def _predict(self, rows: Sequence[Dict[str, np.ndarray]], model: _Loaded) -> List[Any]:
        predictor = model.predictor
        features = stack_rows(list(rows), model.columns)
        if model.lock is None:
            outputs = np.asarray(predictor.predict(features))
        else:
            with model.lock:
                outputs = np.asarray(predictor.predict(features))
        check_outputs(predictor, outputs)
        if predictor.regressor:
            return [RowPrediction(value=float(v)) for v in outputs.reshape(-1)]
        ids, scores = top_k_of(outputs, self.top_k)
        names = np.asarray(predictor.labels, dtype=object)[ids]
        return [RowPrediction(*answer) for answer in zip(
            map(tuple, ids.tolist()), map(tuple, names.tolist()), map(tuple, scores.tolist()))]

    def get_num_bytes(self, batch: Sequence[Dict[str, np.ndarray]]) -> int:
        # Beam's default pickles every batch to measure it; the arrays say their size
        return sum(getattr(v, "nbytes", 8) for row in batch for v in row.values())

    def get_metrics_namespace(self) -> str:
        return NAMESPACE


class KeyedTfkfpModelHandler(KeyedModelHandler):
    """``KeyedModelHandler(TfkfpModelHandler(...))`` (or an EndpointModelHandler) for (key,
    row) elements, each key carried to its answer, without Beam's pickling of every batch's
    keys to size it."""

    def __init__(self, unkeyed: ModelHandler):
        super().__init__(unkeyed)

    def get_num_bytes(self, batch: Sequence[Tuple[Any, Dict[str, np.ndarray]]]) -> int:
        return self._unkeyed.get_num_bytes([row for _key, row in batch])
