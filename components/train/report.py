"""The training report for the KFP UI: a summary, per-epoch curves as an inline SVG chart,
the per-epoch table, and for a regressor its predicted against actual values."""

from typing import Any, Dict, List, Sequence

from tfkfp.components.common.model import regression
from tfkfp.components.common.platform.charts import Chart, data_uri

WIDTH, HEIGHT, PAD = 520, 220, 36
# the curves of each task: the training metric as Keras logs it, and the eval figures
CURVES = {"classification": ("loss", "accuracy", "val_loss", "val_accuracy"),
          "regression": ("loss", "rmse", "val_loss", "val_rmse", "val_mae")}
EVAL_FIGURES = {"classification": (("eval accuracy", "eval_accuracy"), ("eval loss", "eval_loss")),
                "regression": (("eval RMSE", "eval_rmse"), ("eval MAE", "eval_mae"),
                               ("eval R²", "eval_r2"), ("eval loss", "eval_loss"))}
PALETTE = ("#d62728", "#1f77b4", "#ff9896", "#aec7e8", "#2ca02c")


def markdown(result: Dict[str, Any]) -> str:
    history = result["history"]
    curves = CURVES[result.get("task", "classification")]
    lines = ["# Training report", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in summary_rows(result)]
    if history.get("loss"):
        heads = " | ".join(k.replace("val_", "eval ") for k in curves)
        lines += ["", "## Curves", "", f"![{heads} per epoch]({data_uri(svg(history, curves))})",
                  "", "## Epochs", "", f"| epoch | {heads} |", "|---" * (len(curves) + 1) + "|"]
        for i in range(len(history["loss"])):
            row = [_at(history, k, i) for k in curves]
            lines.append(f"| {i + 1} | " + " | ".join(row) + " |")
    if result.get("regression"):
        lines += ["", regression.markdown(result["regression"])]
    return "\n".join(lines) + "\n"


def summary_rows(result: Dict[str, Any]) -> List[tuple]:
    rows = [("strategy", result["strategy"]), ("replicas in sync", result["replicas"]),
            ("worker processes", result.get("workers", 1)),
            ("global batch size", result["global_batch_size"]),
            ("steps per epoch", result["steps_per_epoch"]),
            ("epochs", f"{result['epochs']} (resumed after epoch {result['initial_epoch']})"
             if result["initial_epoch"] else result["epochs"]),
            ("parameters", f"{result['parameters']:,}")]
    rows += [(name, f"{result[key]:.4f}") for name, key
             in EVAL_FIGURES[result.get("task", "classification")] if key in result]
    if result.get("examples_per_second") is None:  # a rerun of a finished run trains nothing
        rows.append(("training", "none in this run: the checkpoint had reached every epoch"))
    else:
        rows += [("examples per second", f"{result['examples_per_second']:,.0f}"),
                 ("mean step time", f"{result['mean_step_ms']:.2f} ms")]
    if result.get("input_wait_fraction") is not None:
        rows.append(("step time waiting for input", f"{result['input_wait_fraction']:.0%}"))
    if result.get("seconds_to_target") is not None:
        rows.append((f"time to target {result.get('target_metric', 'accuracy')}",
                     f"{result['seconds_to_target']:.1f} s"))
    return rows


def _at(history: Dict[str, Sequence[float]], key: str, i: int) -> str:
    values = history.get(key) or []
    return f"{values[i]:.4f}" if i < len(values) else ""


def charts(result: Dict[str, Any]) -> List[Chart]:
    """The report's charts, for the step's HTML page: the curves, a regressor's plots."""
    history, curves = result["history"], CURVES[result.get("task", "classification")]
    out = [("Curves per epoch", svg(history, curves))] if history.get("loss") else []
    return out + (regression.charts(result["regression"]) if result.get("regression") else [])


def svg(history: Dict[str, Sequence[float]],
        curves: Sequence[str] = CURVES["classification"]) -> str:
    """Accuracy on 0 to 1, every other curve scaled to the largest value of its kind (loss,
    or the regressor's errors) per epoch."""
    epochs = max(len(v) for v in history.values())
    kinds = {k: "accuracy" if k.endswith("accuracy") else "loss" if k.endswith("loss")
             else "error" for k in curves}
    tops = {kind: max([max(history.get(k) or [0]) for k in curves if kinds[k] == kind]
                      + [1e-9]) for kind in set(kinds.values())}
    colours = dict(zip(curves, PALETTE))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for key, colour in colours.items():
        values = history.get(key) or []
        scale = 1.0 if kinds[key] == "accuracy" else tops[kinds[key]]
        points = " ".join(f"{_x(i, epochs):.1f},{_y(v / scale):.1f}" for i, v in enumerate(values))
        if points:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                         f'points="{points}"/>')
    for n, key in enumerate(colours):
        parts.append(f'<text x="{PAD + n * 95}" y="14" font-size="11" '
                     f'fill="{colours[key]}">{key}</text>')
    scales = "; ".join(f"{kind} / {top:.3g}" if kind != "accuracy" else "accuracy 0-1"
                       for kind, top in sorted(tops.items()))
    parts.append(f'<text x="4" y="{HEIGHT - 8}" font-size="10">epochs 1-{epochs}; {scales}'
                 '</text></svg>')
    return "".join(parts)


def _x(i: int, epochs: int) -> float:
    return PAD + (WIDTH - 2 * PAD) * (i / max(epochs - 1, 1))


def _y(fraction: float) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * max(0.0, min(1.0, fraction))
