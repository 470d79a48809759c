"""The training report for the KFP UI: a summary, per-epoch curves as an inline SVG chart,
the per-epoch table, and for a regressor its predicted against actual values."""

from typing import Any, Dict, List, Sequence

from tfkfp.components.common.charts import classes, curves
from tfkfp.components.common.charts import regression as regression_charts
from tfkfp.components.common.charts.page import Section
from tfkfp.components.common.model import regression
from tfkfp.components.common.platform.charts import data_uri

# the curves of each task: the training metric as Keras logs it, and the eval figures
CURVES = {"classification": ("loss", "accuracy", "val_loss", "val_accuracy"),
          "regression": ("loss", "rmse", "val_loss", "val_rmse", "val_mae")}
EVAL_FIGURES = {"classification": (("eval accuracy", "eval_accuracy"), ("eval loss", "eval_loss")),
                "regression": (("eval RMSE", "eval_rmse"), ("eval MAE", "eval_mae"),
                               ("eval R²", "eval_r2"), ("eval loss", "eval_loss"))}


def markdown(result: Dict[str, Any]) -> str:
    history = result["history"]
    names = CURVES[result.get("task", "classification")]
    lines = ["# Training report", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in summary_rows(result)]
    if history.get("loss"):
        heads = " | ".join(k.replace("val_", "eval ") for k in names)
        image = data_uri(curves_svg(history, names))
        lines += ["", "## Curves", "", f"![{heads} per epoch]({image})",
                  "", "## Epochs", "", f"| epoch | {heads} |", "|---" * (len(names) + 1) + "|"]
        for i in range(len(history["loss"])):
            row = [_at(history, k, i) for k in names]
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


def charts(result: Dict[str, Any]) -> List[Section]:
    """The step's page: the curves, a classifier's matrix, table and per-class curves, a
    regressor's plots; empty when nothing was measured (a rerun that trained nothing)."""
    history, names = result["history"], CURVES[result.get("task", "classification")]
    out = [("Curves per epoch", curves_svg(history, names))] if history.get("loss") else []
    if result.get("classification"):
        out += classes.sections(result["classification"])
    if result.get("regression"):
        out += regression_charts.sections(result["regression"])
    return out


def class_metrics(summary: Dict[str, Any] | None) -> Dict[str, float]:
    """A classifier's per-class figures for KFP ``Metrics`` (which every UI build draws)."""
    return classes.metrics(summary) if summary else {}


def curves_svg(history: Dict[str, Sequence[float]], names: Sequence[str]) -> str:
    """The task's curves (not whatever else Keras logged), as the page and the report draw
    them."""
    return curves.svg({k: v for k, v in history.items() if k in names})
