"""Size against quality per converted model (freeze_quantize's modes), with the gate's line:
a point per mode, those the gate refused marked apart, the chosen one ringed."""

import dataclasses
from typing import Sequence

from tfkfp.components.common.charts import figure

PASSED, REFUSED = figure.colour(2), figure.colour(3)


@dataclasses.dataclass(frozen=True)
class Point:
    name: str
    size_bytes: int
    quality: float  # accuracy (higher is better) or RMSE (lower is better)
    passed: bool
    chosen: bool = False


def svg(points: Sequence[Point], quality: str, gate: float | None, gate_label: str) -> str:
    """``quality``: the y axis's name; ``gate``: the line a mode must stay on the right side
    of (None: no line)."""
    with figure.drawing(6.0, 4.0) as (fig, ax):
        for p in points:
            ax.scatter(p.size_bytes / 1024, p.quality, s=60 if p.chosen else 30,
                       marker="o" if p.passed else "X", color=PASSED if p.passed else REFUSED,
                       edgecolors="black" if p.chosen else "none", zorder=3)
            ax.annotate(p.name + (" (chosen)" if p.chosen else ""),
                        (p.size_bytes / 1024, p.quality), textcoords="offset points",
                        xytext=(6, 4), fontsize=8)
        if gate is not None:
            ax.axhline(gate, color=REFUSED, linestyle="--", linewidth=1, label=gate_label)
            ax.legend(loc="best", frameon=False, fontsize=8)
        ax.set(xlabel="model size (KiB)", ylabel=quality)
        ax.margins(x=0.25, y=0.2)
        return figure.svg(fig)
