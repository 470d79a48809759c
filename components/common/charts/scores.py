"""ROC and precision-recall curves per class (one-vs-rest) with their areas, gathered batch by
batch in fixed score buckets as TFMA does: memory is classes x BUCKETS whatever the split's
size, and the curves are exact to 1/BUCKETS in the threshold."""

from typing import Any, Dict, List, Sequence

import numpy as np

BUCKETS = 1000
MAX_POINTS = 101  # per curve kept in the summary (and the artifact's metadata)


class ScoreCurves:
    """Per class, counts of that class's score among its own examples and among the rest."""

    def __init__(self, classes: Sequence[Any]):
        self.classes = [str(c) for c in classes]
        self.positive = np.zeros((len(self.classes), BUCKETS), np.int64)
        self.negative = np.zeros((len(self.classes), BUCKETS), np.int64)

    def add(self, labels: np.ndarray, probabilities: np.ndarray) -> None:
        """One batch: true class ids and the per-class scores in [0, 1] (rows x classes)."""
        labels = np.asarray(labels).reshape(-1).astype(np.int64)
        scores = np.asarray(probabilities, np.float64)
        buckets = np.clip((scores * BUCKETS).astype(np.int64), 0, BUCKETS - 1)
        for c in range(len(self.classes)):
            hit = labels == c
            self.positive[c] += np.bincount(buckets[hit, c], minlength=BUCKETS)
            self.negative[c] += np.bincount(buckets[~hit, c], minlength=BUCKETS)

    def summary(self) -> Dict[str, Any]:
        """``roc`` and ``pr``: class -> curve and ``auc``; a class missing from the examples, or
        the only one there, has no curve (a rate would divide by zero)."""
        roc, pr = {}, {}
        for c, name in enumerate(self.classes):
            curve = _curves(self.positive[c], self.negative[c])
            if curve:
                roc[name], pr[name] = curve
        return {"roc": roc, "pr": pr}


def _curves(positive: np.ndarray, negative: np.ndarray):
    """(ROC, PR) when ``score >= threshold`` is called positive, thresholds from the top."""
    p, n = int(positive.sum()), int(negative.sum())
    if not p or not n:
        return None
    tp, fp = np.cumsum(positive[::-1]), np.cumsum(negative[::-1])
    tpr, fpr = np.r_[0.0, tp / p], np.r_[0.0, fp / n]
    called = tp + fp
    seen = called > 0
    recall, precision = tp[seen] / p, tp[seen] / called[seen]
    # average precision: precision at each step of recall (scikit-learn's, TFMA's PR AUC)
    average_precision = float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
    return ({"fpr": _thin(fpr), "tpr": _thin(tpr), "auc": _area(fpr, tpr)},
            {"recall": _thin(np.r_[0.0, recall]), "precision": _thin(np.r_[1.0, precision]),
             "auc": average_precision})


def _area(x: np.ndarray, y: np.ndarray) -> float:
    """Trapezoid rule (numpy 1.x has no np.trapezoid, 2.x no np.trapz)."""
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def _thin(values: np.ndarray) -> List[float]:
    """At most MAX_POINTS, evenly spaced, both ends kept."""
    if len(values) > MAX_POINTS:
        values = values[np.unique(np.round(np.linspace(0, len(values) - 1, MAX_POINTS))
                                  .astype(int))]
    return [round(float(v), 6) for v in values]


def summarise(labels: np.ndarray, probabilities: np.ndarray,
              classes: Sequence[Any]) -> Dict[str, Any]:
    """:meth:`ScoreCurves.summary` of one batch holding every example."""
    curves = ScoreCurves(classes)
    curves.add(labels, probabilities)
    return curves.summary()
