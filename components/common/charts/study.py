"""A tuning study: the objective per trial, then the objective against each setting, the
settings that mattered most first (as Optuna's history and slice plots show them)."""

from typing import Any, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.charts import figure

MAX_SETTINGS = 4  # panels of settings drawn, the most telling first


def importance(trials: Sequence[Dict[str, Any]], name: str) -> float:
    """How much the objective follows a setting, 0 to 1: the squared rank correlation of a
    number, the share of variance between groups of a choice."""
    pairs = [(t["settings"][name], t["value"]) for t in trials if name in t["settings"]]
    if len(pairs) < 2:
        return 0.0
    values = np.asarray([v for _, v in pairs], np.float64)
    if values.std() == 0:
        return 0.0
    if all(isinstance(s, (int, float)) and not isinstance(s, bool) for s, _ in pairs):
        ranks = np.argsort(np.argsort([s for s, _ in pairs])).astype(np.float64)
        if ranks.std() == 0:
            return 0.0
        return float(np.corrcoef(ranks, np.argsort(np.argsort(values)))[0, 1] ** 2)
    groups: Dict[str, List[float]] = {}
    for s, v in pairs:
        groups.setdefault(str(s), []).append(v)
    between = sum(len(g) * (np.mean(g) - values.mean()) ** 2 for g in groups.values())
    return float(between / (values.var() * len(values)))


def ranked(trials: Sequence[Dict[str, Any]]) -> List[tuple]:
    """(setting, importance), most important first."""
    names = sorted({n for t in trials for n in t["settings"]})
    return sorted(((n, importance(trials, n)) for n in names), key=lambda p: -p[1])


def svg(rows: Sequence[Dict[str, Any]], objective: str, best: int | None = None) -> str | None:
    """The trials (the report's rows) that have a value; None when there are none."""
    trials = [r for r in rows if r.get("value") is not None]
    if not trials:
        return None
    settings = ranked(trials)[:MAX_SETTINGS]
    with figure.drawing(3.4 * (1 + len(settings)), 3.2, ncols=1 + len(settings),
                        squeeze=False) as (fig, axes):
        _history(axes[0][0], trials, objective, best)
        for ax, (name, score) in zip(axes[0][1:], settings):
            _slice(ax, trials, name, score, objective)
        return figure.svg(fig)


def _history(ax, trials, objective: str, best: int | None) -> None:
    ax.scatter([t["number"] for t in trials], [t["value"] for t in trials], s=18,
               color=figure.colour(0))
    for t in trials:
        if t["number"] == best:
            ax.scatter([t["number"]], [t["value"]], s=70, facecolors="none",
                       edgecolors=figure.colour(3), label="best")
            ax.legend(loc="best", frameon=False, fontsize=8)
    ax.set(title="objective per trial", xlabel="trial", ylabel=objective)


def _slice(ax, trials, name: str, score: float, objective: str) -> None:
    pairs = [(t["settings"][name], t["value"]) for t in trials if name in t["settings"]]
    xs = [s for s, _ in pairs]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs):
        categories = sorted({str(x) for x in xs})
        xs = [categories.index(str(x)) for x in xs]
        ax.set_xticks(range(len(categories)), labels=categories)
    elif min(xs) > 0 and max(xs) / min(xs) >= 100:  # a learning rate: read it on a log scale
        ax.set_xscale("log")
    ax.scatter(xs, [v for _, v in pairs], s=18, color=figure.colour(1))
    ax.set(title=f"{name} (importance {score:.2f})", xlabel=name, ylabel=objective)
