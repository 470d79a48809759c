"""export_tflite's page: the TFLite model judged on the validation examples, a classifier's
matrix, table and per-class curves, a regressor's two plots; never a page saying there is
nothing to show."""

import re

from tfkfp.components.common.charts import page
from tfkfp.components.export_tflite.core import export_tflite


def test_a_classifiers_page_has_its_matrix_and_ten_curves_of_each_kind(
        dynamic_dir, demo_model, demo_dataset, tmp_path):
    result = export_tflite(demo_model, demo_dataset, str(tmp_path / "bundle"),
                           quantized_dir=dynamic_dir, eval_examples=100)
    sections = result.charts()
    assert [c.split(" (")[0] for c, _ in sections] == [
        "Confusion matrix", "Per class", "ROC per class, one-vs-rest",
        "Precision-recall per class, one-vs-rest"]
    assert all("validation, TFLite model" in c for c, _ in sections)
    for _, svg in sections[2:]:
        assert len(re.findall(r"<text[^>]*>\d \(AUC [01]\.\d{3}\)</text>", svg)) == 10
    path = tmp_path / "charts"
    assert page.write_page(str(path), "TFLite export", sections)
    assert path.stat().st_size < page.MAX_PAGE_BYTES and "No charts" not in path.read_text()


def test_a_regressors_page_has_predicted_against_true_and_residuals(
        regression_model, regression_dataset, tmp_path):
    result = export_tflite(regression_model, regression_dataset, str(tmp_path / "bundle"),
                           quantization="none", max_rmse_increase=0.5)
    assert [c.split(" (")[0] for c, _ in result.charts()] == ["Predicted against true",
                                                              "Residuals"]
