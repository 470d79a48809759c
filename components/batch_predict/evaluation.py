"""The model judged on the rows it predicted, where they carry the label (the eval split): a
classifier's confusion matrix and per-class ROC and precision-recall curves, a regressor's
predicted against true values, drawn on the step's page as train draws them."""

from typing import Any, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.charts import classes, page
from tfkfp.components.common.charts import regression as regression_charts
from tfkfp.components.common.charts.scores import ScoreCurves
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.model import classification, regression

WHAT = "batch predictions of the eval split"


def label_column(schema: Schema, split: str, key_columns: Sequence[Column],
                 taken: Sequence[str]) -> List[Column]:
    """The label, to carry beside the keys: for the eval split, where the data holds it as a
    scalar not already carried and not named like a prediction column."""
    label = schema.label
    if (split != "eval" or label is None or label.shape or label.encoding
            or label.name in taken or any(c.name == label.name for c in key_columns)):
        return []
    return [label]


class Evaluation:
    """Gathers (label, model output) batch by batch; does nothing without a carried label."""

    def __init__(self, key_columns: Sequence[Column], labels: Sequence[str], regressor: bool):
        self.label = next((c for c in key_columns if c.role == "label"), None)
        self.labels, self.regressor = [str(n) for n in labels], regressor
        self.index = {name: i for i, name in enumerate(self.labels)}
        self.matrix = classification.Accumulator(self.labels) if self.label and not regressor \
            and self.labels else None
        self.curves = ScoreCurves(self.labels) if self.matrix else None
        self.values = regression.Accumulator() if self.label and regressor else None
        self.rows = 0

    def add(self, keys: Dict[str, np.ndarray], outputs: np.ndarray) -> None:
        if self.label is None or not len(outputs):
            return
        truth = keys[self.label.name]
        self.rows += len(outputs)
        if self.values is not None:
            self.values.add(np.asarray(truth, np.float64), outputs)
            return
        if self.matrix is None:
            return
        ids = np.asarray([self.index.get(_text(v), -1) for v in truth])
        known = ids >= 0  # a label the model has no class for cannot be scored
        self.matrix.add(ids[known], outputs[known])
        self.curves.add(ids[known], outputs[known])

    def summary(self) -> Dict[str, Any] | None:
        """None when no row was judged here (no label, or an endpoint or Beam answered)."""
        if not self.rows:
            return None
        if self.values is not None:
            return {"regression": self.values.summary()}
        if self.matrix is not None:
            return {"classification": {**self.matrix.summary(),
                                       "curves": self.curves.summary()}}
        return None


def sections(summary: Dict[str, Any] | None) -> List[page.Section]:
    """The page's charts of :meth:`Evaluation.summary`; none without one."""
    if not summary:
        return []
    if summary.get("regression"):
        return regression_charts.sections(summary["regression"], WHAT)
    return classes.sections(summary["classification"], WHAT)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
