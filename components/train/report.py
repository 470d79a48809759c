"""The training report for the KFP UI: a summary, per-epoch curves as an inline SVG chart,
and the per-epoch table."""

import base64
from typing import Any, Dict, List, Sequence

WIDTH, HEIGHT, PAD = 520, 220, 36
COLOURS = {"loss": "#d62728", "val_loss": "#ff9896", "accuracy": "#1f77b4",
           "val_accuracy": "#aec7e8"}


def markdown(result: Dict[str, Any]) -> str:
    history = result["history"]
    lines = ["# Training report", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in summary_rows(result)]
    if history.get("loss"):
        lines += ["", "## Curves", "", f"![loss and accuracy per epoch]({_svg_uri(history)})",
                  "", "## Epochs", "", "| epoch | loss | accuracy | eval loss | eval accuracy |",
                  "|---|---|---|---|---|"]
        for i in range(len(history["loss"])):
            row = [_at(history, k, i) for k in ("loss", "accuracy", "val_loss", "val_accuracy")]
            lines.append(f"| {i + 1} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def summary_rows(result: Dict[str, Any]) -> List[tuple]:
    rows = [("strategy", result["strategy"]), ("replicas in sync", result["replicas"]),
            ("worker processes", result.get("workers", 1)),
            ("global batch size", result["global_batch_size"]),
            ("steps per epoch", result["steps_per_epoch"]),
            ("epochs", f"{result['epochs']} (resumed after epoch {result['initial_epoch']})"
             if result["initial_epoch"] else result["epochs"]),
            ("parameters", f"{result['parameters']:,}"),
            ("eval accuracy", f"{result['eval_accuracy']:.4f}"),
            ("eval loss", f"{result['eval_loss']:.4f}")]
    if result.get("examples_per_second") is None:  # a rerun of a finished run trains nothing
        rows.append(("training", "none in this run: the checkpoint had reached every epoch"))
    else:
        rows += [("examples per second", f"{result['examples_per_second']:,.0f}"),
                 ("mean step time", f"{result['mean_step_ms']:.2f} ms")]
    if result.get("input_wait_fraction") is not None:
        rows.append(("step time waiting for input", f"{result['input_wait_fraction']:.0%}"))
    if result.get("seconds_to_target") is not None:
        rows.append(("time to target accuracy", f"{result['seconds_to_target']:.1f} s"))
    return rows


def _at(history: Dict[str, Sequence[float]], key: str, i: int) -> str:
    values = history.get(key) or []
    return f"{values[i]:.4f}" if i < len(values) else ""


def _svg_uri(history: Dict[str, Sequence[float]]) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg(history).encode()).decode()


def svg(history: Dict[str, Sequence[float]]) -> str:
    """Loss (left, scaled to its maximum) and accuracy (0 to 1) per epoch."""
    epochs = max(len(v) for v in history.values())
    top_loss = max([max(history.get(k) or [0]) for k in ("loss", "val_loss")] + [1e-9])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for key, colour in COLOURS.items():
        values = history.get(key) or []
        scale = top_loss if "loss" in key else 1.0
        points = " ".join(f"{_x(i, epochs):.1f},{_y(v / scale):.1f}" for i, v in enumerate(values))
        if points:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                         f'points="{points}"/>')
    for n, key in enumerate(COLOURS):
        parts.append(f'<text x="{PAD + n * 120}" y="14" font-size="11" '
                     f'fill="{COLOURS[key]}">{key}</text>')
    parts.append(f'<text x="4" y="{HEIGHT - 8}" font-size="10">epochs 1-{epochs}; loss / '
                 f'{top_loss:.3g}, accuracy 0-1</text></svg>')
    return "".join(parts)


def _x(i: int, epochs: int) -> float:
    return PAD + (WIDTH - 2 * PAD) * (i / max(epochs - 1, 1))


def _y(fraction: float) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * max(0.0, min(1.0, fraction))
