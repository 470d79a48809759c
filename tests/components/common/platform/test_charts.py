"""The step's page of charts: inline SVG every Kubeflow UI version shows, bounded in size."""

import base64

import pytest

from tfkfp.components.common.model import regression
from tfkfp.components.common.platform import charts
from tfkfp.components.train import report

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'


def test_a_page_holds_each_chart_inline_under_its_escaped_caption():
    text = charts.page("A <run>", [("loss & accuracy", SVG), ("bars", SVG)])
    assert text.startswith("<!DOCTYPE html>") and "<title>A &lt;run&gt;</title>" in text
    assert f"<h2>loss &amp; accuracy</h2><figure>{SVG}</figure>" in text
    assert text.count("<svg") == 2
    assert "data:" not in text and "<script" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_a_chart_that_would_pass_the_size_bound_is_left_out_and_named():
    big = SVG.replace("</svg>", "<!--" + "x" * charts.MAX_PAGE_BYTES + "--></svg>")
    text = charts.page("run", [("small", SVG), ("huge", big), ("after", SVG)])
    assert len(text.encode()) <= charts.MAX_PAGE_BYTES
    assert "<h2>small</h2>" in text and "<h2>after</h2>" in text and "<h2>huge</h2>" not in text
    assert "Left out to keep this page under 256 KB: huge." in text


def test_a_page_without_charts_says_so(tmp_path):
    path = str(tmp_path / "charts")
    charts.write_page(path, "Training", [])
    assert "No charts for this run." in open(path).read()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"]  # no temporary left


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
    assert len(charts.page("r", plots).encode()) < charts.MAX_PAGE_BYTES


def test_the_bottleneck_chart_is_drawn_only_when_the_step_ran():
    from tfkfp.components.diagnose_bottleneck import report as diagnosis

    ran = {"input_records_per_second": 5.0, "compute_records_per_second": 10.0,
           "combined_records_per_second": 4.0}
    ((caption, svg),) = diagnosis.charts(ran)
    assert caption == "Records per second" and svg.startswith("<svg")
    assert diagnosis.charts({"input_records_per_second": 5.0}) == []
