"""A classifier's charts, as the KFP UI and TFMA show them: the confusion matrix as a heatmap
with counts, precision, recall and F1 per class, and ROC and precision-recall curves per class
(one-vs-rest) with their areas."""

from typing import Any, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.charts import figure, page

ANNOTATED = 30  # classes up to which each cell shows its count
NAMED = 40  # classes up to which the axes name each class
LEGEND = 20  # curves up to which the legend names each (the table always does)
MAX_CURVES = 100  # curves drawn per plot


def sections(summary: Dict[str, Any], what: str = "eval split") -> List[page.Section]:
    """The heatmap, the per-class table and both curve plots of a classification summary
    (common.model.classification's, with ``curves`` from common.charts.scores)."""
    classes, matrix = summary.get("classes") or [], summary.get("matrix")
    curves = summary.get("curves") or {"roc": {}, "pr": {}}
    out = []
    if matrix is not None and np.asarray(matrix).sum():
        out.append((f"Confusion matrix ({what}, {int(np.sum(matrix)):,} examples)",
                    confusion_svg(classes, np.asarray(matrix))))
        out.append((f"Per class ({what})", per_class_table(classes, np.asarray(matrix),
                                                           curves)))
    if curves["roc"]:
        roc, pr, shown = _first(curves["roc"]), _first(curves["pr"]), ""
        if len(roc) < len(curves["roc"]):
            shown = f"; the first {len(roc)} of {len(curves['roc'])} classes"
        out.append((f"ROC per class, one-vs-rest ({what}{shown})", roc_svg(roc)))
        out.append((f"Precision-recall per class, one-vs-rest ({what}{shown})", pr_svg(pr)))
    return out


def _first(curves: Dict[str, Any]) -> Dict[str, Any]:
    """At most MAX_CURVES curves: more cannot be told apart, and would swell the page."""
    return dict(list(curves.items())[:MAX_CURVES])


def confusion_svg(classes: Sequence[str], matrix: np.ndarray) -> str:
    n = len(classes)
    side = min(9.0, 3.0 + 0.35 * n)
    with figure.drawing(side + 1.2, side) as (fig, ax):
        image = ax.imshow(matrix, cmap="Blues", interpolation="nearest")
        fig.colorbar(image, ax=ax, label="examples", shrink=0.8)
        ax.grid(False)
        ax.set(xlabel="predicted class", ylabel="true class")
        if n <= NAMED:
            ax.set_xticks(range(n), labels=classes, rotation=90 if n > 10 else 0)
            ax.set_yticks(range(n), labels=classes)
        if n <= ANNOTATED:
            _annotate(ax, matrix)
        return figure.svg(fig)


def _annotate(ax, matrix: np.ndarray) -> None:
    dark = matrix.max() / 2 if matrix.max() else 1
    size = 9 if len(matrix) <= 12 else 6
    for (row, col), count in np.ndenumerate(matrix):
        ax.text(col, row, str(int(count)), ha="center", va="center", fontsize=size,
                color="white" if count > dark else "black")


def per_class(matrix: np.ndarray) -> Dict[str, np.ndarray]:
    """Precision, recall and F1 per class (rows true, columns predicted); 0 where undefined."""
    hits = np.diag(matrix).astype(np.float64)
    called, support = matrix.sum(axis=0), matrix.sum(axis=1)
    precision = np.divide(hits, called, out=np.zeros_like(hits), where=called > 0)
    recall = np.divide(hits, support, out=np.zeros_like(hits), where=support > 0)
    both = precision + recall
    f1 = np.divide(2 * precision * recall, both, out=np.zeros_like(hits), where=both > 0)
    return {"precision": precision, "recall": recall, "f1": f1, "support": support}


def per_class_table(classes: Sequence[str], matrix: np.ndarray,
                    curves: Dict[str, Dict[str, Any]]) -> str:
    figures = per_class(matrix)
    rows = []
    for i, name in enumerate(classes):
        roc, pr = curves["roc"].get(name), curves["pr"].get(name)
        rows.append([name, *(f"{figures[k][i]:.4f}" for k in ("precision", "recall", "f1")),
                     int(figures["support"][i]), f"{roc['auc']:.4f}" if roc else "n/a",
                     f"{pr['auc']:.4f}" if pr else "n/a"])
    rows.append(["macro average", *(f"{figures[k].mean():.4f}"
                                    for k in ("precision", "recall", "f1")),
                 int(figures["support"].sum()), "", ""])
    return page.table(["class", "precision", "recall", "F1", "examples", "ROC AUC",
                       "PR AUC"], rows)


def metrics(summary: Dict[str, Any], per_class_up_to: int = LEGEND) -> Dict[str, float]:
    """Macro precision, recall, F1 and AUCs, and each class's AUCs up to ``per_class_up_to``
    classes, for KFP ``Metrics``: the figures the pictures show, in a form every UI draws."""
    out: Dict[str, float] = {}
    if summary.get("matrix") is not None and np.asarray(summary["matrix"]).sum():
        figures = per_class(np.asarray(summary["matrix"]))
        out.update({f"{k}_macro": float(figures[k].mean()) for k in ("precision", "recall",
                                                                     "f1")})
    curves = summary.get("curves") or {"roc": {}, "pr": {}}
    for kind in ("roc", "pr"):
        aucs = {name: curve["auc"] for name, curve in curves[kind].items()}
        if aucs:
            out[f"{kind}_auc_macro"] = float(np.mean(list(aucs.values())))
        if len(aucs) <= per_class_up_to:
            out.update({f"{kind}_auc_class_{name}": auc for name, auc in aucs.items()})
    return out


def roc_svg(roc: Dict[str, Dict[str, Any]]) -> str:
    return _curves_svg(roc, "fpr", "tpr", "false positive rate", "true positive rate",
                       chance=([0, 1], [0, 1]))


def pr_svg(pr: Dict[str, Dict[str, Any]]) -> str:
    return _curves_svg(pr, "recall", "precision", "recall", "precision", chance=None)


def _curves_svg(curves, x: str, y: str, xlabel: str, ylabel: str, chance) -> str:
    with figure.drawing(6.4 if len(curves) <= LEGEND else 4.8, 4.4) as (fig, ax):
        for i, (name, curve) in enumerate(curves.items()):
            ax.plot(curve[x], curve[y], color=figure.colour(i), linewidth=1.4,
                    linestyle="-" if i < len(figure.COLOURS) else "--",
                    label=f"{name} (AUC {curve['auc']:.3f})")
        if chance:
            ax.plot(*chance, color="#999999", linewidth=0.8, linestyle=":")
        ax.set(xlabel=xlabel, ylabel=ylabel, xlim=(0, 1), ylim=(0, 1.02), aspect="equal")
        if len(curves) <= LEGEND:
            ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False,
                      fontsize=8, title="class (AUC)")
        return figure.svg(fig)
