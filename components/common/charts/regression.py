"""A regressor's two plots, as TFMA and scikit-learn draw them: predicted against true with
the line y = x, and residuals (predicted - true) against predicted with the zero line."""

from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.charts import figure, page


def sections(summary: Dict[str, Any], what: str = "eval split") -> List[page.Section]:
    """Both plots of a common.model.regression summary (its ``points``: [true, predicted])."""
    points = np.asarray(summary.get("points") or [], np.float64).reshape(-1, 2)
    if not len(points):
        return []
    figures = (f"RMSE {summary['rmse']:.4g}, MAE {summary['mae']:.4g}, "
               f"R² {summary['r2']:.4f}, {summary['count']:,} examples")
    return [(f"Predicted against true ({what}; {figures})", predicted_svg(points)),
            (f"Residuals ({what})", residuals_svg(points))]


def predicted_svg(points: np.ndarray) -> str:
    true, predicted = points[:, 0], points[:, 1]
    low, high = float(points.min()), float(points.max())
    with figure.drawing(4.2, 4.0) as (fig, ax):
        ax.scatter(true, predicted, s=6, alpha=0.5, color=figure.colour(0), linewidths=0)
        ax.plot([low, high], [low, high], color=figure.colour(3), linewidth=1,
                label="predicted = true")
        ax.set(xlabel="true value", ylabel="predicted value", aspect="equal")
        ax.legend(loc="upper left", frameon=False)
        return figure.svg(fig)


def residuals_svg(points: np.ndarray) -> str:
    predicted, residual = points[:, 1], points[:, 1] - points[:, 0]
    with figure.drawing(7.0, 3.2, ncols=2, width_ratios=(3, 2)) as (fig, (scatter, hist)):
        scatter.scatter(predicted, residual, s=6, alpha=0.5, color=figure.colour(0),
                        linewidths=0)
        scatter.axhline(0.0, color=figure.colour(3), linewidth=1)
        scatter.set(xlabel="predicted value", ylabel="residual (predicted - true)")
        hist.hist(residual, bins=30, color=figure.colour(0))
        hist.axvline(0.0, color=figure.colour(3), linewidth=1)
        hist.set(xlabel="residual (predicted - true)", ylabel="examples")
        return figure.svg(fig)
