"""freeze_quantize's chart: size against accuracy (a regressor: RMSE) per mode, the gate's
line at the SavedModel's figure less what the gate accepts, refused modes marked."""

import re

from tfkfp.components.common.tflite.parity import Figures, Gate
from tfkfp.components.freeze_quantize import report
from tfkfp.components.freeze_quantize.result import FreezeQuantizeResult


def words(svg):
    return set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_size_against_accuracy_with_the_gates_line():
    figures = [Figures("none", 400_000, 0.91, 0.91, 1.0, 0.0, 0.0, 200),
               Figures("dynamic", 110_000, 0.905, 0.91, 0.99, 0.01, 0.001, 200),
               Figures("int8", 100_000, 0.80, 0.91, 0.85, 0.2, 0.01, 200)]
    caption, svg = report.chart(figures, "dynamic", Gate(max_accuracy_drop=0.02),
                                {"int8": "accuracy drop 11 points"})
    assert caption.startswith("Size against accuracy")
    assert {"none", "dynamic (chosen)", "int8", "gate: SavedModel accuracy - 0.02",
            "model size (KiB)", "accuracy"} <= words(svg)


def test_a_regressor_is_drawn_by_its_rmse_and_a_model_without_figures_not_at_all():
    figures = [Figures("none", 400_000, None, None, None, 0.0, 0.0, 50, rmse=1.0,
                       reference_rmse=1.0),
               Figures("float16", 200_000, None, None, None, 0.0, 0.0, 50, rmse=1.01,
                       reference_rmse=1.0)]
    caption, svg = report.chart(figures, "float16", Gate(max_rmse_increase=0.05), {})
    assert caption.startswith("Size against RMSE")
    assert {"gate: SavedModel RMSE +5%", "RMSE (lower is better)"} <= words(svg)
    blind = [Figures("none", 400_000, None, None, None, 0.0, 0.0, 50)]
    assert report.chart(blind, "none", Gate(), {}) is None


def test_the_steps_page_holds_the_chart_or_nothing():
    def result(figures):
        return FreezeQuantizeResult("dynamic", "serving_raw", figures, {}, None, 0.0, "", "",
                                    1.0, gate=Gate(max_accuracy_drop=0.02))

    measured = [Figures("none", 400_000, 0.91, 0.91, 1.0, 0.0, 0.0, 200),
                Figures("dynamic", 110_000, 0.905, 0.91, 0.99, 0.01, 0.001, 200)]
    (caption, svg), = result(measured).charts()
    assert caption.startswith("Size against accuracy") and "dynamic (chosen)" in words(svg)
    assert result([Figures("dynamic", 1, None, None, None, 0.0, 0.0, 5)]).charts() == []
