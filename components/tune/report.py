"""The tuning report: the best trial, the objective against the settings that mattered, and
a table of every trial (settings, objective, state, seconds, why it stopped)."""

from typing import Any, Dict, List

from tfkfp.components.common.charts import study
from tfkfp.components.common.charts.page import Section
from tfkfp.components.common.platform.charts import data_uri

STATES = {"FAIL": "failed"}  # Optuna's state names as the report says them


def markdown(result) -> str:
    """``result``: a core.TuneResult."""
    lines = ["# Tuning report", "", "| | |", "|---|---|",
             f"| objective | {result.objective} ({result.direction}) |",
             f"| best | {result.best_value:.4f} (trial {result.best_number}) |",
             f"| best settings | {_settings(result.best_settings)} |",
             *(f"| trials {state} | {count} |" for state, count in result.counts().items()),
             f"| study | {result.study_dir} |"]
    if result.resumed:
        lines.append("| resumed | yes: trials of an earlier run were kept |")
    section = chart(result)
    if section:  # a data: image: KFP 2.17's UI draws it, earlier ones show the table only
        lines += ["", f"## {section[0]}", "", f"![{section[0]}]({data_uri(section[1])})"]
    lines += ["", "## Trials", "", "| trial | state | objective | epochs | seconds | settings "
              "| note |", "|---|---|---|---|---|---|---|"]
    lines += [_row(row) for row in result.trials]
    return "\n".join(lines) + "\n"


def chart(result) -> Section | None:
    """The objective per trial and against each setting, the most telling first; None
    before any trial has a value."""
    drawn = study.svg(result.trials, result.objective, result.best_number)
    return (f"{result.objective} against the settings", drawn) if drawn else None


def _row(row: Dict[str, Any]) -> str:
    value = "" if row["value"] is None else f"{row['value']:.4f}"
    seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f}"
    note = row["note"].replace("|", "\\|").replace("\n", " ")[:200]
    return (f"| {row['number']} | {row['state']} | {value} | {row['epochs']} | {seconds} | "
            f"{_settings(row['settings'])} | {note} |")


def _settings(settings: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in sorted(settings.items()))


def _value(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def rows(trials: List[Any]) -> List[Dict[str, Any]]:
    """Optuna FrozenTrials as the report's rows."""
    out = []
    for t in trials:
        seconds = t.duration.total_seconds() if t.duration else None
        note = t.user_attrs.get("stopped") or t.user_attrs.get("error") or ""
        if t.system_attrs.get("failed_trial") is not None:
            note = f"retry of trial {t.system_attrs['failed_trial']} {note}".strip()
        state = STATES.get(t.state.name, t.state.name.lower())
        out.append({"number": t.number, "state": state, "value": t.value,
                    "epochs": len(t.intermediate_values), "seconds": seconds,
                    "settings": dict(t.params), "note": note})
    return out
