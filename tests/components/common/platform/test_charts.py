"""A chart as a Markdown image's data: URL, and the charts of the reports that still draw
their own SVG: each fits the step's page."""

import base64

import pytest

from tfkfp.components.common.charts import page
from tfkfp.components.common.model import regression
from tfkfp.components.common.platform import charts
from tfkfp.components.train import report

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'


def test_a_data_url_holds_the_svg_whole():
    assert charts.data_uri(SVG) == "data:image/svg+xml;base64," + base64.b64encode(
        SVG.encode()).decode()


def test_the_markdown_image_and_the_page_draw_the_same_chart():
    history = {"loss": [1.0, 0.5], "accuracy": [0.5, 0.9], "val_loss": [1.1, 0.6],
               "val_accuracy": [0.4, 0.8]}
    result = {"history": history, "task": "classification", "strategy": "default",
              "replicas": 1, "global_batch_size": 8, "steps_per_epoch": 2, "epochs": 2,
              "initial_epoch": 0, "parameters": 10, "examples_per_second": 1.0,
              "mean_step_ms": 1.0}
    ((caption, svg),) = report.charts(result)
    assert caption == "Curves per epoch"
    encoded = base64.b64encode(svg.encode()).decode()
    assert f"data:image/svg+xml;base64,{encoded}" in report.markdown(result)


@pytest.mark.parametrize("count", [3, 100_000])
def test_a_regressors_plots_stay_small_whatever_the_examples(count):
    import numpy as np

    actual = np.linspace(0, 1, count)
    summary = regression.summarise(actual, actual + 0.1)
    plots = regression.charts(summary)
    assert [c for c, _ in plots] == ["Predicted against actual (eval split)",
                                     "Error distribution (eval split)"]
    assert len(page.page("r", plots).encode()) < 256 * 1024


def test_the_bottleneck_chart_is_drawn_only_when_the_step_ran(tmp_path):
    from tfkfp.components.diagnose_bottleneck import report as diagnosis

    ran = {"input_records_per_second": 5.0, "compute_records_per_second": 10.0,
           "combined_records_per_second": 4.0}
    ((caption, svg),) = diagnosis.charts(ran)
    assert caption == "Records per second" and svg.startswith("<svg")
    assert diagnosis.charts({"input_records_per_second": 5.0}) == []
    assert page.write_page(str(tmp_path / "charts"), "Bottleneck diagnosis", []) is False
    assert (tmp_path / "charts").read_text() == "<!DOCTYPE html><html></html>\n"
