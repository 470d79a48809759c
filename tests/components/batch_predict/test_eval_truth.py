"""Predictions of the eval split carry the label and say whether each is right (a regressor:
its residual), and the step judges the model on them: the confusion matrix, per-class curves,
or the residual plots of its page."""

import numpy as np

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.charts import page


def test_eval_rows_carry_the_label_and_whether_the_class_is_right(demo_model, demo_dataset,
                                                                  predictor, read_outputs,
                                                                  tmp_path):
    for fmt in ("jsonl", "csv", "tfrecord"):
        out = str(tmp_path / fmt)
        result = batch_predict(demo_model, demo_dataset, out, split="eval", output_format=fmt,
                               predictor=predictor)
        rows = read_outputs(out, fmt)
        assert len(rows) == result.predictions > 0
        assert all({"id", "label", "class", "correct"} <= set(r) for r in rows)
        assert all(int(r["correct"]) == (str(r["label"]) == r["class"]) for r in rows)
    right = np.mean([int(r["correct"]) for r in rows])
    summary = result.classification()
    matrix = np.asarray(summary["matrix"])
    assert matrix.sum() == result.predictions
    assert np.trace(matrix) / matrix.sum() == right  # the matrix is the rows' own truth
    assert len(summary["curves"]["roc"]) == len(summary["curves"]["pr"]) == 10
    captions = [c for c, _ in result.charts()]
    assert len(captions) == 4 and captions[0].startswith("Confusion matrix (batch predictions")
    assert len(page.page("Batch prediction", result.charts()).encode()) < page.MAX_PAGE_BYTES


def test_other_splits_carry_no_label_and_draw_nothing(demo_model, demo_dataset, predictor,
                                                      read_outputs, tmp_path):
    out = str(tmp_path / "train")
    result = batch_predict(demo_model, demo_dataset, out, split="train", predictor=predictor)
    rows = read_outputs(out)
    assert rows and not {"label", "correct"} & set(rows[0])
    assert result.evaluation is None and result.charts() == []


def test_a_regressors_eval_split_draws_its_residuals(regression_model, regression_dataset,
                                                     tmp_path):
    result = batch_predict(regression_model, regression_dataset, str(tmp_path / "out"),
                           split="eval", keys=["house"])
    summary = result.evaluation["regression"]
    assert summary["count"] == result.predictions > 0 and summary["r2"] > 0.5
    captions = [c for c, _ in result.charts()]
    assert [c.split(" (")[0] for c in captions] == ["Predicted against true", "Residuals"]
    assert result.classification() is None


def _run_step(model, dataset, out, **kwargs):
    """The component's body on local paths: its metrics, ClassificationMetrics and page."""
    from kfp import dsl

    from tfkfp.components.batch_predict.component import batch_predict as step

    metrics, matrix = dsl.Metrics(uri=str(out / "m")), dsl.ClassificationMetrics(uri=str(out / "c"))
    step.python_func(model=dsl.Model(uri=model), dataset=dsl.Dataset(uri=dataset),
                     predictions=dsl.Dataset(uri=str(out / "p")), metrics=metrics,
                     classification=matrix, charts=dsl.HTML(uri=str(out / "page")),
                     gcp_resources=str(out / "gcp"), **kwargs)
    return metrics.metadata, matrix.metadata, (out / "page").read_text()


def test_the_step_logs_the_eval_splits_matrix_metrics_and_page(demo_model, demo_dataset,
                                                                tmp_path):
    logged, matrix, text = _run_step(demo_model, demo_dataset, tmp_path, split="eval")
    assert np.asarray(matrix["confusionMatrix"]["rows"][0]["row"]).size == 10
    assert 0 < logged["f1_macro"] <= 1 and 0.5 < logged["roc_auc_macro"] <= 1
    assert len([k for k in logged if k.startswith("pr_auc_class_")]) == 10
    assert "<h1>Batch prediction</h1>" in text and "<h2>Confusion matrix (batch" in text


def test_the_step_publishes_an_empty_page_where_nothing_is_judged(demo_model, demo_dataset,
                                                                   tmp_path):
    logged, matrix, text = _run_step(demo_model, demo_dataset, tmp_path, split="train")
    assert text == "<!DOCTYPE html><html></html>\n" and "f1_macro" not in logged
    assert "eval split" in matrix["notes"][0] and "confusionMatrix" not in matrix
