"""A regressor's predictions against the actual values: RMSE, MAE and R², and the two plots a
reader checks first (predicted against actual, and the distribution of the errors), as
inline SVG for a Markdown report the KFP UI shows."""

import math
from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.platform.charts import Chart, data_uri

PLOT_POINTS = 1000  # points drawn in the scatter plot (evenly spaced over the examples)
BINS = 20
SIZE, PAD = 300, 40


class Accumulator:
    """Collects (actual, predicted) pairs batch by batch."""

    def __init__(self):
        self._actual: List[np.ndarray] = []
        self._predicted: List[np.ndarray] = []

    def add(self, actual, predicted) -> None:
        self._actual.append(np.asarray(actual, np.float64).reshape(-1))
        self._predicted.append(np.asarray(predicted, np.float64).reshape(-1))

    def summary(self) -> Dict[str, Any]:
        actual = np.concatenate(self._actual) if self._actual else np.zeros(0)
        predicted = np.concatenate(self._predicted) if self._predicted else np.zeros(0)
        return summarise(actual, predicted)


def summarise(actual: np.ndarray, predicted: np.ndarray) -> Dict[str, Any]:
    """Figures and plot data of predicted against actual values."""
    error = predicted - actual
    count = len(actual)
    spread = float(np.sum((actual - actual.mean()) ** 2)) if count else 0.0
    step = max(1, count // PLOT_POINTS)
    counts, edges = _histogram(error) if count else (np.zeros(0), np.zeros(0))
    return {"count": count,
            "rmse": math.sqrt(float(np.mean(error ** 2))) if count else 0.0,
            "mae": float(np.mean(np.abs(error))) if count else 0.0,
            "r2": 1.0 - float(np.sum(error ** 2)) / spread if spread > 0 else 0.0,
            "points": [[float(a), float(p)] for a, p in zip(actual[::step], predicted[::step])],
            "error_histogram": {"edges": [float(e) for e in edges],
                                "counts": [int(c) for c in counts]}}


def _histogram(error: np.ndarray):
    """BINS bins over the errors; errors all but equal (a constant offset, rounding apart)
    get numpy's own unit range around them, where BINS bins of their width cannot exist."""
    low, high = float(error.min()), float(error.max())
    if high - low <= 1e-9 * max(1.0, abs(low)):
        return np.histogram(error, bins=BINS, range=(low - 0.5, high + 0.5))
    return np.histogram(error, bins=BINS)


def markdown(summary: Dict[str, Any], what: str = "eval split") -> str:
    """The figures and both plots, for a Markdown report."""
    return "\n".join([
        f"## Predicted against actual ({what}, {summary['count']:,} examples)", "",
        f"RMSE {summary['rmse']:.4g}, MAE {summary['mae']:.4g}, R² {summary['r2']:.4f}.", "",
        f"![predicted against actual]({data_uri(scatter_svg(summary['points']))}) "
        f"![error distribution]({data_uri(histogram_svg(summary['error_histogram']))})", ""])


def charts(summary: Dict[str, Any], what: str = "eval split") -> List[Chart]:
    """Both plots, for the step's HTML page of charts."""
    return [(f"Predicted against actual ({what})", scatter_svg(summary["points"])),
            (f"Error distribution ({what})", histogram_svg(summary["error_histogram"]))]


def scatter_svg(points: List[List[float]]) -> str:
    """Predicted (y) against actual (x) on the same scale, with the line y = x."""
    values = [v for point in points for v in point] or [0.0, 1.0]
    low, high = min(values), max(values)
    span = (high - low) or 1.0

    def at(v: float) -> float:
        return PAD + (SIZE - 2 * PAD) * (v - low) / span

    dots = "".join(f'<circle cx="{at(a):.1f}" cy="{SIZE - at(p):.1f}" r="1.6"/>'
                   for a, p in points)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}">'
            f'<rect width="{SIZE}" height="{SIZE}" fill="white"/>'
            f'<line x1="{PAD}" y1="{SIZE - PAD}" x2="{SIZE - PAD}" y2="{PAD}" '
            f'stroke="#d62728"/><g fill="#1f77b4" fill-opacity="0.5">{dots}</g>'
            f'<text x="{PAD}" y="{SIZE - 8}" font-size="11">actual {low:.3g} to {high:.3g}</text>'
            f'<text x="4" y="14" font-size="11">predicted (red: predicted = actual)</text>'
            '</svg>')


def histogram_svg(histogram: Dict[str, List[float]]) -> str:
    """Counts of the errors (predicted - actual) per bin."""
    counts, edges = histogram["counts"], histogram["edges"]
    top = max(counts or [1]) or 1
    width = (SIZE - 2 * PAD) / max(len(counts), 1)
    bars = "".join(
        f'<rect x="{PAD + i * width:.1f}" y="{SIZE - PAD - (SIZE - 2 * PAD) * c / top:.1f}" '
        f'width="{max(width - 1, 1):.1f}" height="{(SIZE - 2 * PAD) * c / top:.1f}"/>'
        for i, c in enumerate(counts))
    span = f"{edges[0]:.3g} to {edges[-1]:.3g}" if edges else "none"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}">'
            f'<rect width="{SIZE}" height="{SIZE}" fill="white"/>'
            f'<g fill="#1f77b4">{bars}</g>'
            f'<text x="{PAD}" y="{SIZE - 8}" font-size="11">error {span}</text>'
            f'<text x="4" y="14" font-size="11">examples per error bin (max {top})</text></svg>')

