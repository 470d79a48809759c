"""matplotlib without a display: figures are drawn by the SVG backend (Agg for pixels), never
through pyplot, so no global state or window is touched and a pod without X draws them."""

import contextlib
import io
import re
from typing import Iterator

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

# text stays <text> (searchable, crisp at any zoom); a fixed hash salt keeps ids stable
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "tfkfp", "font.size": 10,
         "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
         "axes.spines.right": False, "figure.dpi": 100}
# splits and classes: matplotlib's colour-blind-aware default cycle
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


@contextlib.contextmanager
def drawing(width: float, height: float, **subplots) -> Iterator[tuple]:
    """(figure, axes) to draw on, in the suite's style; rendered by :func:`svg`."""
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        # room at the edges: a browser's fallback font can be wider than matplotlib's
        fig.get_layout_engine().set(w_pad=0.15, h_pad=0.1)
        yield fig, fig.subplots(**subplots)


def svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML prologue, no date)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None})
    text = buffer.getvalue()
    return text[re.search(r"<svg[\s>]", text).start():]
