"""A step's charts for the Kubeflow UI, two ways: ``data:`` URLs for its Markdown report, and
one HTML page of inline SVG (a KFP ``HTML`` artifact).

Every supported UI renders the HTML artifact; only KFP 2.17's (markdown-to-jsx 7.7) keeps the
``data:image`` URLs of a Markdown report, 2.14 to 2.16 (markdown-to-jsx 6.11) drop them. The
page holds no script and no external reference, and stays under MAX_PAGE_BYTES, well inside
what the UI loads: a chart that would pass it is left out and the page says so.
"""

import base64
import html
import os
from typing import Sequence, Tuple

MAX_PAGE_BYTES = 256 * 1024
Chart = Tuple[str, str]  # (caption, SVG document)


def data_uri(svg: str) -> str:
    """An SVG as a ``data:`` URL, for a Markdown image."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def page(title: str, charts: Sequence[Chart]) -> str:
    """A standalone HTML page: the title, then each chart under its caption."""
    head = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head><body style=\"font-family:sans-serif\"><h1>{html.escape(title)}"
            "</h1>")
    tail = "</body></html>\n"
    parts, size, left_out = [], len(head) + len(tail) + 200, []
    for caption, svg in charts:
        section = f"<h2>{html.escape(caption)}</h2><figure>{svg}</figure>"
        if size + len(section.encode()) > MAX_PAGE_BYTES:
            left_out.append(caption)
            continue
        parts.append(section)
        size += len(section.encode())
    if not charts:
        parts.append("<p>No charts for this run.</p>")
    if left_out:
        parts.append(f"<p>Left out to keep this page under {MAX_PAGE_BYTES // 1024} KB: "
                     f"{html.escape(', '.join(left_out))}.</p>")
    return head + "".join(parts) + tail


def write_page(path: str, title: str, charts: Sequence[Chart]) -> None:
    """The page written to a temporary name, then renamed: never half a page."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(page(title, charts))
    os.replace(path + ".tmp", path)
