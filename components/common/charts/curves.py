"""Training curves as TensorBoard draws them: one panel per figure (loss, accuracy, RMSE...)
on its own scale, epochs on the x axis, one line per split."""

from typing import Dict, List, Sequence

from tfkfp.components.common.charts import figure

SPLITS = (("", "train"), ("val_", "eval"))  # Keras's key prefix, the split's name
LABELS = {"loss": "loss", "accuracy": "accuracy", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}


def panels(history: Dict[str, Sequence[float]]) -> List[str]:
    """The figures with at least one value, loss first, in the history's order."""
    names = []
    for key, values in history.items():
        name = key[len("val_"):] if key.startswith("val_") else key
        if values and name not in names:
            names.append(name)
    return sorted(names, key=lambda n: n != "loss")


def svg(history: Dict[str, Sequence[float]]) -> str:
    """Side by side panels, one line per split; empty history: no chart (the caller skips)."""
    names = panels(history)
    with figure.drawing(3.6 * len(names), 3.0, ncols=len(names), squeeze=False) as (fig, axes):
        for ax, name in zip(axes[0], names):
            _panel(ax, history, name)
        return figure.svg(fig)


def _panel(ax, history: Dict[str, Sequence[float]], name: str) -> None:
    for i, (prefix, split) in enumerate(SPLITS):
        values = history.get(prefix + name) or []
        if values:
            epochs = range(1, len(values) + 1)
            ax.plot(epochs, values, marker="o", markersize=3, color=figure.colour(i),
                    label=split)
    label = LABELS.get(name, name)
    ax.set(title=label, xlabel="epoch", ylabel=label)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="best", frameon=False)
