"""A chart as a ``data:`` URL, for a Markdown report's image: KFP 2.17's UI (markdown-to-jsx
7.7) keeps it, 2.14 to 2.16 (6.11) drop every ``data:`` URL, so each report's charts are also
on the step's HTML page (:mod:`common.charts.page`), which every supported UI renders."""

import base64
from typing import Tuple

Chart = Tuple[str, str]  # (caption, SVG document)


def data_uri(svg: str) -> str:
    """An SVG as a ``data:`` URL, for a Markdown image."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
