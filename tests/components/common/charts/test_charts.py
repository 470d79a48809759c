"""The steps' charts: matplotlib figures inline in one bounded page, with axes, one curve per
class and split, areas that match the exact ones."""

import re

import numpy as np
import pytest

from tfkfp.components.common.charts import (
    classes,
    curves,
    page,
    regression,
    scores,
    study,
    tradeoff,
)
from tfkfp.components.common.model import regression as model_regression


def texts(svg):
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg) + re.findall(
        r"<!-- (.*?) -->", svg)


def exact_auc(labels, scores_):
    """ROC AUC as the Mann-Whitney statistic (ties count half)."""
    pos, neg = scores_[labels], scores_[~labels]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return greater / (len(pos) * len(neg))


def test_areas_match_the_exact_ones_within_a_bucket(ten_classes):
    labels, probs, summary = ten_classes()
    for c in range(10):
        roc = summary["curves"]["roc"][f"digit {c}"]
        assert roc["auc"] == pytest.approx(exact_auc(labels == c, probs[:, c]), abs=2e-3)
        assert len(roc["fpr"]) <= scores.MAX_POINTS and roc["fpr"][0] == 0 == roc["tpr"][0]
        assert roc["fpr"][-1] == 1 == roc["tpr"][-1]
        pr = summary["curves"]["pr"][f"digit {c}"]
        assert 0.1 < pr["auc"] <= 1 and pr["recall"][-1] == 1


def test_a_class_absent_from_the_examples_has_no_curve():
    out = scores.summarise(np.zeros(5, int), np.full((5, 2), 0.5), ["a", "b"])
    assert out == {"roc": {}, "pr": {}}


def test_ten_classes_get_ten_roc_and_ten_pr_curves_with_their_areas(ten_classes):
    _, _, summary = ten_classes()
    sections = dict(classes.sections(summary))
    assert list(sections) == ["Confusion matrix (eval split, 3,000 examples)",
                              "Per class (eval split)", "ROC per class, one-vs-rest (eval split)",
                              "Precision-recall per class, one-vs-rest (eval split)"]
    roc, pr = (texts(sections[k]) for k in list(sections)[2:])
    assert len([t for t in roc if re.fullmatch(r"digit \d \(AUC 0\.\d{3}\)", t)]) == 10
    assert len([t for t in pr if re.fullmatch(r"digit \d \(AUC 0\.\d{3}\)", t)]) == 10
    assert {"false positive rate", "true positive rate"} <= set(roc)
    assert {"recall", "precision"} <= set(pr)
    matrix = texts(sections["Confusion matrix (eval split, 3,000 examples)"])
    assert {"predicted class", "true class", "examples"} <= set(matrix)
    assert str(summary["matrix"][0][0]) in matrix  # each cell shows its count
    table = sections["Per class (eval split)"]
    assert table.count("<tr>") == 12 and "macro average" in table and "F1" in table


def test_precision_recall_and_f1_per_class(ten_classes):
    figures = classes.per_class(np.array([[8, 2], [4, 6]]))
    assert figures["precision"].tolist() == pytest.approx([8 / 12, 6 / 8])
    assert figures["recall"].tolist() == pytest.approx([0.8, 0.6])
    f1 = 2 * (8 / 12) * 0.8 / (8 / 12 + 0.8)
    assert figures["f1"][0] == pytest.approx(f1)
    _, _, summary = ten_classes()
    metrics = classes.metrics(summary)
    assert len([k for k in metrics if k.startswith("roc_auc_class_")]) == 10
    assert {"precision_macro", "recall_macro", "f1_macro", "roc_auc_macro",
            "pr_auc_macro"} <= set(metrics)


def test_curves_put_each_figure_on_its_own_axes_one_line_per_split():
    history = {"loss": [2.0, 1.0, 0.5], "accuracy": [0.3, 0.6, 0.9], "val_loss": [2.1, 1.2, 0.7],
               "val_accuracy": [0.2, 0.5, 0.8]}
    svg = curves.svg(history)
    words = texts(svg)
    assert words.count("epoch") == 2 and {"loss", "accuracy", "train", "eval"} <= set(words)
    assert svg.count('id="axes_') == 2
    assert curves.panels({"loss": [1.0], "val_rmse": [0.5], "val_mae": [0.4]}) == [
        "loss", "rmse", "mae"]


def test_a_regressor_gets_predicted_against_true_and_residuals():
    rng = np.random.default_rng(1)
    true = rng.normal(size=2000)
    summary = model_regression.summarise(true, true + rng.normal(scale=0.2, size=2000))
    (first, scatter), (second, residuals) = regression.sections(summary)
    assert first.startswith("Predicted against true") and second.startswith("Residuals")
    assert {"true value", "predicted value", "predicted = true"} <= set(texts(scatter))
    assert {"predicted value", "residual (predicted - true)", "examples"} <= set(
        texts(residuals))
    assert regression.sections({**summary, "points": []}) == []


def test_the_tradeoff_draws_each_mode_and_the_gate():
    points = [tradeoff.Point("float32", 400_000, 0.91, True),
              tradeoff.Point("dynamic", 110_000, 0.905, True, chosen=True),
              tradeoff.Point("int8", 100_000, 0.80, False)]
    words = texts(tradeoff.svg(points, "accuracy", 0.90, "gate: accuracy - 0.01"))
    assert {"float32", "dynamic (chosen)", "int8", "gate: accuracy - 0.01",
            "model size (KiB)", "accuracy"} <= set(words)


def test_the_study_ranks_the_setting_the_objective_follows_first():
    rng = np.random.default_rng(2)
    rows = []
    for n in range(16):
        rate, units = float(10 ** rng.uniform(-4, -1)), int(rng.integers(8, 64))
        rows.append({"number": n, "value": -np.log10(rate) + rng.normal(scale=0.01),
                     "settings": {"learning_rate": rate, "units": units,
                                  "optimizer": ["adam", "sgd"][n % 2]}})
    assert study.ranked(rows)[0][0] == "learning_rate"
    words = texts(study.svg(rows, "val_loss", best=3))
    assert {"objective per trial", "trial", "val_loss", "best"} <= set(words)
    assert any(w.startswith("learning_rate (importance") for w in words)
    assert study.svg([{"number": 0, "value": None, "settings": {}}], "val_loss") is None


def test_a_page_is_self_contained_bounded_and_names_what_it_left_out(ten_classes):
    _, _, summary = ten_classes()
    sections = classes.sections(summary)
    text = page.page("A <run>", sections)
    assert "<title>A &lt;run&gt;</title>" in text and "<script" not in text
    assert not re.search(r"(href|src)=\"(http|//)", text)
    assert len(text.encode()) < page.MAX_PAGE_BYTES
    huge = ("huge", "<svg>" + "x" * page.MAX_PAGE_BYTES + "</svg>")
    bounded = page.page("run", [sections[0], huge, sections[1]])
    assert len(bounded.encode()) <= page.MAX_PAGE_BYTES and "<h2>huge</h2>" not in bounded
    assert "Left out to keep this page under 2 MB: huge." in bounded


def test_nothing_to_draw_writes_an_empty_document_that_claims_nothing(tmp_path):
    path = str(tmp_path / "charts")
    assert page.write_page(path, "TFLite export", []) is False
    text = open(path).read()
    assert "<body" not in text and "No charts" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"]  # no temporary left


def test_three_hundred_classes_draw_the_first_hundred_curves_within_the_bound():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 300, 6000)
    probs = rng.dirichlet(np.ones(300), size=6000)
    names = [str(i) for i in range(300)]
    summary = {"classes": names, "matrix": None,
               "curves": scores.summarise(labels, probs, names)}
    sections = classes.sections(summary)
    assert [c for c, _ in sections] == [
        "ROC per class, one-vs-rest (eval split; the first 100 of 300 classes)",
        "Precision-recall per class, one-vs-rest (eval split; the first 100 of 300 classes)"]
    assert len(page.page("many", sections).encode()) < page.MAX_PAGE_BYTES // 2
