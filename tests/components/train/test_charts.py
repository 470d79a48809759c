"""train's page of charts: the curves with axes, and for the ten digits a confusion matrix,
a table and ten ROC and ten precision-recall curves with their areas, which the step also
logs as Metrics; a regressor's page has its two plots."""

import re

from kfp import dsl

from tfkfp.components.common.charts import page
from tfkfp.components.train import report
from tfkfp.components.train.component import train


def test_ten_digits_get_ten_roc_and_ten_pr_curves_and_their_metrics(demo_dataset, tmp_path):
    metrics = dsl.Metrics(uri=str(tmp_path / "metrics"))
    charts = tmp_path / "charts"
    train.python_func(
        dataset=dsl.Dataset(uri=demo_dataset), model=dsl.Model(uri=str(tmp_path / "model")),
        metrics=metrics, classification=dsl.ClassificationMetrics(uri=str(tmp_path / "c")),
        report=dsl.Markdown(uri=str(tmp_path / "report")), charts=dsl.HTML(uri=str(charts)),
        tensorboard=dsl.Artifact(uri=str(tmp_path / "tensorboard")),
        gcp_resources=str(tmp_path / "gcp_resources"), epochs=2, hidden_units="32", seed=4)
    text = charts.read_text()
    assert charts.stat().st_size < page.MAX_PAGE_BYTES
    for caption in ("Curves per epoch", "Confusion matrix (eval split", "Per class (eval split)",
                    "ROC per class, one-vs-rest", "Precision-recall per class, one-vs-rest"):
        assert f"<h2>{caption}" in text
    labels = re.findall(r"<text[^>]*>(\d \(AUC [01]\.\d{3}\))</text>", text)
    assert len(labels) == 20 and len(set(labels)) >= 10  # ten ROC, ten PR
    logged = metrics.metadata
    assert len([k for k in logged if k.startswith("roc_auc_class_")]) == 10
    assert len([k for k in logged if k.startswith("pr_auc_class_")]) == 10
    assert 0.5 < logged["roc_auc_macro"] <= 1 and 0 < logged["f1_macro"] <= 1


def test_a_regressors_page_has_its_curves_and_both_plots(regression_dataset, tmp_path):
    from tfkfp.components.train.core import train as run_training

    result = run_training(regression_dataset, str(tmp_path / "model"), epochs=2,
                          hidden_units="16", seed=2)
    captions = [c.split(" (")[0] for c, _ in result.charts()]
    assert captions == ["Curves per epoch", "Predicted against true", "Residuals"]
    curves = result.charts()[0][1]
    assert {"RMSE", "MAE", "loss", "epoch"} <= set(re.findall(r"<text[^>]*>([^<]*)</text>",
                                                              curves))
    assert report.class_metrics(result.classification()) == {}
