import numpy as np
import pytest

from tfkfp.components.common.charts import scores
from tfkfp.components.common.model import classification


def _ten_classes(rows=3000, seed=0):
    """(labels, probabilities, summary with curves) of a fair ten-class model."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, rows)
    logits = rng.normal(size=(rows, 10))
    logits[np.arange(rows), labels] += 2.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    names = [f"digit {i}" for i in range(10)]
    summary = classification.summarise(labels, probs, names)
    return labels, probs, {**summary, "curves": scores.summarise(labels, probs, names)}


@pytest.fixture
def ten_classes():
    return _ten_classes
