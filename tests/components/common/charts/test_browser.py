"""Every kind of chart page, drawn by headless Chromium: the plots are there (coloured pixels
inside the page, not a blank or broken frame), the axes are labelled, the page is bounded.
Skips loudly without /usr/bin/chromium (apt-get install -y chromium)."""

import re
import types

import numpy as np
import pytest
from browser import coloured, drawn, screenshot

from tfkfp.components.batch_predict import evaluation
from tfkfp.components.common.charts import page
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.model import regression
from tfkfp.components.common.tflite.parity import Figures, Gate
from tfkfp.components.freeze_quantize import report as freeze_report
from tfkfp.components.train import report as train_report
from tfkfp.components.tune import report as tune_report

HISTORY = {"loss": [2.0, 1.1, 0.7, 0.5], "accuracy": [0.4, 0.7, 0.8, 0.86],
           "val_loss": [2.1, 1.3, 0.9, 0.8], "val_accuracy": [0.35, 0.6, 0.75, 0.8]}


def regressor_summary(rows=2000):
    rng = np.random.default_rng(3)
    true = rng.normal(size=rows)
    return regression.summarise(true, true + rng.normal(scale=0.3, size=rows))


def train_classifier(ten_classes):
    return train_report.charts({"history": HISTORY, "classification": ten_classes()[2]})


def train_regressor(_ten_classes):
    history = {"loss": [1.0, 0.5], "rmse": [1.0, 0.7], "val_loss": [1.1, 0.6],
               "val_rmse": [1.05, 0.75], "val_mae": [0.8, 0.6]}
    return train_report.charts({"history": history, "task": "regression",
                                "regression": regressor_summary()})


def freeze_quantize(_ten_classes):
    def mode(name, size, accuracy):
        return Figures(name, size, accuracy, 0.91, 0.99, 0.01, 0.001, 200)

    figures = [mode("float32", 400_000, 0.91), mode("dynamic", 110_000, 0.905),
               mode("int8", 100_000, 0.80)]
    return [freeze_report.chart(figures, "dynamic", Gate(), {"int8": "accuracy drop"})]


def tune(_ten_classes):
    rng = np.random.default_rng(4)
    trials = [{"number": n, "value": float(rng.random()), "state": "complete", "epochs": 2,
               "seconds": 1.0, "note": "", "settings": {"learning_rate": float(
                   10 ** rng.uniform(-4, -1)), "hidden_units": ["32", "64,32"][n % 2]}}
              for n in range(10)]
    result = types.SimpleNamespace(trials=trials, objective="val_accuracy", best_number=2)
    return [tune_report.chart(result)]


def batch_predict_eval(ten_classes):
    labels, probs, _ = ten_classes(rows=500)
    label = Column("label", "int64", role="label")
    judged = evaluation.Evaluation([label], [str(i) for i in range(10)], regressor=False)
    judged.add({"label": labels}, probs)
    return evaluation.sections(judged.summary())


CLASSES = {"epoch", "predicted class", "true class", "false positive rate", "true positive rate",
           "recall", "precision"}
# each page: what draws it, its sections, the axis labels it must show
PAGES = {"train, classifier": (train_classifier, 5, CLASSES),
         "train, regressor": (train_regressor, 3, {"epoch", "RMSE", "true value",
                                                   "predicted value", "examples"}),
         "freeze_quantize": (freeze_quantize, 1, {"model size (KiB)", "accuracy"}),
         "tune": (tune, 1, {"trial", "val_accuracy", "learning_rate", "hidden_units"}),
         "batch_predict, eval split": (batch_predict_eval, 4, CLASSES - {"epoch"})}


@pytest.mark.parametrize("name", PAGES)
def test_chromium_draws_every_chart_page(name, tmp_path, ten_classes):
    make, count, axes = PAGES[name]
    sections = make(ten_classes)
    assert len(sections) == count and all(sections)
    path = tmp_path / "page.html"
    page.write_page(str(path), name, sections)
    assert path.stat().st_size < page.MAX_PAGE_BYTES
    pixels = screenshot(path, tmp_path / "page.png")
    assert drawn(pixels) > 10_000 * count, "the page is nearly all background"
    assert coloured(pixels) > 300 * count, "no plot was drawn: nothing but text and background"
    text = path.read_text()
    for caption, _ in sections:
        assert caption.split(" (")[0] in text
    assert axes <= set(re.findall(r"<text[^>]*>([^<]*)</text>", text))
