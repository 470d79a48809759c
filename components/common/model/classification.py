"""Confusion matrix and ROC curve of a classifier, for KFP's ``ClassificationMetrics``.

Plain NumPy, no kfp and no TensorFlow: ``train`` accumulates the eval split batch by batch
(:class:`Accumulator`), ``export_tflite`` its validation examples in one go
(:func:`summarise`). The result is a JSON-ready dict (``classes``, ``matrix``, ``roc``) that
the components hand to :func:`log_to`, which writes it into a ``ClassificationMetrics``
artifact: the KFP UI draws the matrix, with the class names, and the ROC curve.

Rows of the matrix are the true classes, columns the predicted ones (the top class), both
in the order of the label vocabulary. The ROC curve is drawn for two classes only, for the
second class of the vocabulary (index 1) as the positive one, and has at most
``max_points`` points so the artifact's metadata stays small. A matrix over more than
``MAX_CLASSES`` classes is left out, for the same reason, and the artifact says why.
"""

from typing import Any, Dict, List, Sequence

import numpy as np

MAX_CLASSES = 100
MAX_ROC_POINTS = 101


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, num_classes: int
                     ) -> np.ndarray:
    """Counts of (true class, predicted class) pairs: ``num_classes`` x ``num_classes``."""
    labels, predicted = _class_ids(labels, num_classes, "label"), _class_ids(
        predicted, num_classes, "predicted class")
    if labels.shape != predicted.shape:
        raise ValueError(f"{len(labels)} labels but {len(predicted)} predictions")
    flat = np.bincount(labels * num_classes + predicted, minlength=num_classes * num_classes)
    return flat.reshape(num_classes, num_classes)


def roc_curve(labels: np.ndarray, scores: np.ndarray, positive: int = 1,
              max_points: int = MAX_ROC_POINTS) -> Dict[str, List[float]] | None:
    """False and true positive rates when ``score >= threshold`` is called positive.

    One point per distinct score (highest first), after a first point (0, 0) whose threshold
    is just above the highest score; thinned to ``max_points`` evenly spaced points, the
    first and last kept. None when the labels hold only one of the two sides, where a rate
    is undefined.
    """
    if max_points < 2:
        raise ValueError(f"max_points {max_points} is below 2: a curve needs both ends")
    labels, scores = np.asarray(labels).reshape(-1), np.asarray(scores, np.float64).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"{len(labels)} labels but {len(scores)} scores")
    order = np.argsort(-scores, kind="stable")
    ordered, hit = scores[order], labels[order] == positive
    positives, negatives = int(hit.sum()), int((~hit).sum())
    if not positives or not negatives:
        return None
    last = np.r_[np.flatnonzero(np.diff(ordered)), len(ordered) - 1]  # end of each score
    tpr = np.r_[0.0, np.cumsum(hit)[last] / positives]
    fpr = np.r_[0.0, np.cumsum(~hit)[last] / negatives]
    thresholds = np.r_[np.nextafter(ordered[0], np.inf), ordered[last]]
    if len(tpr) > max_points:
        keep = np.unique(np.round(np.linspace(0, len(tpr) - 1, max_points)).astype(int))
        fpr, tpr, thresholds = fpr[keep], tpr[keep], thresholds[keep]
    return {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "thresholds": thresholds.tolist()}


class Accumulator:
    """The matrix, and the scores an ROC curve needs, gathered batch by batch: memory for
    the matrix and, with two classes, one score per example."""

    def __init__(self, classes: Sequence[Any]):
        self.classes = [str(c) for c in classes]
        n = len(self.classes)
        self.matrix = np.zeros((n, n), np.int64)
        self._labels: List[np.ndarray] = []
        self._scores: List[np.ndarray] = []

    def add(self, labels: np.ndarray, probabilities: np.ndarray) -> None:
        """One batch: true class ids and the per-class probabilities (rows x classes)."""
        probabilities = np.asarray(probabilities)
        n = len(self.classes)
        if probabilities.ndim != 2 or probabilities.shape[1] != n:
            raise ValueError(f"probabilities of shape {probabilities.shape}, expected "
                             f"(examples, {n}) for classes {self.classes}")
        labels = np.asarray(labels).reshape(-1)
        self.matrix += confusion_matrix(labels, probabilities.argmax(axis=1), n)
        if n == 2:
            self._labels.append(labels.astype(np.int64))
            self._scores.append(probabilities[:, 1].astype(np.float64))

    def summary(self, max_points: int = MAX_ROC_POINTS) -> Dict[str, Any]:
        """``classes``, ``matrix`` (None above MAX_CLASSES classes) and ``roc`` (None unless
        two classes with both present), ``examples`` and ``notes`` saying what is left out."""
        n, notes = len(self.classes), []
        matrix = self.matrix.tolist() if n <= MAX_CLASSES else None
        if matrix is None:
            notes.append(f"confusion matrix left out: {n} classes, above {MAX_CLASSES}")
        roc = None
        if n == 2 and self._labels:
            roc = roc_curve(np.concatenate(self._labels), np.concatenate(self._scores),
                            max_points=max_points)
            if roc is None:
                notes.append("ROC curve left out: the examples hold only one class")
        elif n != 2:
            notes.append(f"ROC curve drawn for two classes only; there are {n}")
        return {"classes": self.classes, "matrix": matrix, "roc": roc,
                "examples": int(self.matrix.sum()), "notes": notes}


def summarise(labels: np.ndarray, probabilities: np.ndarray, classes: Sequence[Any],
              max_points: int = MAX_ROC_POINTS) -> Dict[str, Any]:
    """:meth:`Accumulator.summary` of one batch holding every example."""
    accumulator = Accumulator(classes)
    accumulator.add(labels, probabilities)
    return accumulator.summary(max_points)


def log_to(artifact, summary: Dict[str, Any] | None) -> None:
    """Write a summary into a KFP ``ClassificationMetrics`` artifact (duck-typed: anything
    with ``log_confusion_matrix``, ``log_roc_curve`` and ``metadata``); without one (a model
    whose output is not class scores over the Dataset's labels) only a note says so."""
    if not summary:
        artifact.metadata["notes"] = ["no confusion matrix: the model's output is not class "
                                      "scores over the Dataset's labels"]
        return
    if summary.get("matrix") is not None:
        artifact.log_confusion_matrix(summary["classes"], summary["matrix"])
    roc = summary.get("roc")
    if roc is not None:
        artifact.log_roc_curve(roc["fpr"], roc["tpr"], roc["thresholds"])
    artifact.metadata["examples"] = summary.get("examples", 0)
    if summary.get("notes"):
        artifact.metadata["notes"] = list(summary["notes"])


def _class_ids(values: np.ndarray, num_classes: int, what: str) -> np.ndarray:
    ids = np.asarray(values).reshape(-1)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{what} ids must be integers, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    bad = np.flatnonzero((ids < 0) | (ids >= num_classes))
    if bad.size:
        raise ValueError(f"{what} id {ids[bad[0]]} at position {bad[0]} is outside the "
                         f"{num_classes} classes (0 to {num_classes - 1})")
    return ids
