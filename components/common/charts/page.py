"""One self-contained HTML page per chart artifact: the figures inline, no script, no external
reference, under MAX_PAGE_BYTES (the KFP UI loads the whole page into a sandboxed frame)."""

import html
import os
from typing import List, Sequence, Tuple

MAX_PAGE_BYTES = 2 * 1024 * 1024
Section = Tuple[str, str]  # (caption, HTML fragment: an <svg> or a <table>)

_HEAD = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title><style>"
         "body{{font-family:sans-serif;margin:16px}}figure{{margin:0 0 24px}}"
         "table{{border-collapse:collapse}}td,th{{padding:2px 8px;text-align:right;"
         "border-bottom:1px solid #ddd}}svg{{max-width:100%;height:auto}}</style></head>"
         "<body><h1>{title}</h1>")
_TAIL = "</body></html>\n"


def page(title: str, sections: Sequence[Section]) -> str:
    """The title, then each section under its caption; a section that would pass the size
    bound is left out and named at the end."""
    head = _HEAD.format(title=html.escape(title))
    parts: List[str] = []
    size, left_out = len(head.encode()) + len(_TAIL) + 300, []
    for caption, fragment in sections:
        part = f"<h2>{html.escape(caption)}</h2><figure>{fragment}</figure>"
        if size + len(part.encode()) > MAX_PAGE_BYTES:
            left_out.append(caption)
            continue
        parts.append(part)
        size += len(part.encode())
    if left_out:
        parts.append(f"<p>Left out to keep this page under {MAX_PAGE_BYTES >> 20} MB: "
                     f"{html.escape(', '.join(left_out))}.</p>")
    return head + "".join(parts) + _TAIL


def write_page(path: str, title: str, sections: Sequence[Section]) -> bool:
    """Write the page (to a temporary name, then renamed: never half a page). With nothing
    to draw, the file is an empty document: KFP uploads every declared output, so the file
    must exist, but it claims nothing. Returns whether anything was drawn."""
    text = page(title, sections) if sections else "<!DOCTYPE html><html></html>\n"
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return bool(sections)


def table(heads: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain HTML table, cells escaped."""
    cells = "".join(f"<th>{html.escape(str(h))}</th>" for h in heads)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"

