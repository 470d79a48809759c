"""The steps' charts: matplotlib figures as inline SVG in one self-contained HTML page."""
