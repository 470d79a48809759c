"""The Markdown report freeze_quantize shows in the KFP UI, and its size-against-quality
chart."""

from typing import Dict, List, Sequence

from tfkfp.components.common.charts import tradeoff
from tfkfp.components.common.charts.page import Section
from tfkfp.components.common.tflite.parity import Figures, Gate


def mode_table(figures: List[Figures], chosen: str, float_size: int | None,
               skipped: Dict[str, str] | None = None,
               refused: Dict[str, str] | None = None,
               cut: Dict[str, str] | None = None) -> str:
    """One row per mode measured (accuracy and agreement "n/a" where there are no labels or
    class scores; a regressor's RMSE and its increase in their place; latency with the
    calls timed; the seconds it took; why the gate refused it, or why the budget cut it
    short: then its figures are those measured by then), then one per mode cut short before
    anything was measured and one per mode auto skipped, with the reason."""
    cut = cut or {}
    regressor = any(f.rmse is not None for f in figures)
    quality = "RMSE | increase" if regressor else "accuracy | drop (points)"
    rows = [f"| mode | size | vs float32 | {quality} | agreement | "
            "relative error | max abs diff | ms/example | ms/batch | seconds | gate |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for f in figures:
        ratio = f"{f.size_bytes / float_size:.2f}x" if float_size else ""
        name = f"**{f.mode}** (chosen)" if f.mode == chosen else f.mode
        batch = (f"{f.latency_batch_ms:.2f} (x{f.batch_size}, {_runs(f.latency_runs_batch)})"
                 if f.latency_batch_ms is not None else "")
        example = (f"{f.latency_example_ms:.3f} ({_runs(f.latency_runs_example)})"
                   if f.latency_example_ms is not None else "")
        if regressor:
            quality = (f"{f.rmse:.4g} | {100 * f.rmse_increase:+.2f}%" if f.rmse is not None
                       else "n/a | n/a")
        else:
            drop = "n/a" if f.accuracy_drop is None else f"{100 * f.accuracy_drop:+.2f}"
            quality = f"{_num(f.accuracy)} | {drop}"
        seconds = f"{f.seconds:.1f}" if f.seconds is not None else ""
        gate = _gate_cell(f.mode, refused or {}, cut)
        rows.append(f"| {name} | {_size(f.size_bytes)} | {ratio} | {quality} | "
                    f"{_num(f.agreement)} | {f.relative_error:.2e} | "
                    f"{f.max_abs_diff:.2e} | {example} | {batch} | {seconds} | {gate} |")
    measured = {f.mode for f in figures}
    for mode, why in cut.items():
        if mode not in measured:
            rows.append(f"| {mode} | {why.replace('|', '/')} | | | | | | | | | | |")
    for mode, why in (skipped or {}).items():
        reason = why.replace("|", "/")
        rows.append(f"| {mode} | skipped: {reason} | | | | | | | | | | |")
    return "\n".join(rows)


def _gate_cell(mode: str, refused: Dict[str, str], cut: Dict[str, str]) -> str:
    if mode in cut:
        return f"not chosen, {cut[mode]}".replace("|", "/")
    if mode in refused:
        return "refused: " + refused[mode].replace("|", "/")
    return "passed"


def _runs(count: int | None) -> str:
    return f"{count} call{'s' if count != 1 else ''}" if count is not None else "calls n/a"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def freeze_table(spec: Dict, max_abs_diff: float, agreement: float | None) -> str:
    ops_before, ops_after = spec["ops"]["before"], spec["ops"]["after"]
    top = sorted(set(ops_before) | set(ops_after),
                 key=lambda op: -max(ops_before.get(op, 0), ops_after.get(op, 0)))[:12]
    lines = ["| | SavedModel signature | frozen graph |", "|---|---:|---:|",
             f"| nodes | {spec['nodes']['before']} | {spec['nodes']['after']} |",
             f"| size (graph + variables) | {_size(spec['bytes']['before'])} | "
             f"{_size(spec['bytes']['after'])} |"]
    lines += [f"| `{op}` | {ops_before.get(op, 0)} | {ops_after.get(op, 0)} |" for op in top]
    lines.append("")
    lines.append(f"Frozen graph vs SavedModel: top-1 agreement {_num(agreement)}, max abs "
                 f"output difference {max_abs_diff:.2e}.")
    return "\n".join(lines)


def _size(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"


def chart(figures: Sequence[Figures], chosen: str, gate: Gate,
          refused: Dict[str, str]) -> Section | None:
    """Size against accuracy (a regressor: RMSE) per mode measured, with the gate's line at
    the SavedModel's figure less the accepted drop; None when no mode has the figure."""
    regressor = any(f.rmse is not None for f in figures)
    quality = [(f, f.rmse if regressor else f.accuracy) for f in figures]
    points = [tradeoff.Point(f.mode, f.size_bytes, q, passed=f.mode not in refused
                             and not f.cut_short, chosen=f.mode == chosen)
              for f, q in quality if q is not None]
    if not points:
        return None
    line, label = _gate_line(figures, gate, regressor)
    name = "RMSE (lower is better)" if regressor else "accuracy"
    return (f"Size against {name.split(' ')[0]} per mode (eval examples)",
            tradeoff.svg(points, name, line, label))


def _gate_line(figures: Sequence[Figures], gate: Gate, regressor: bool):
    if regressor:
        reference = next((f.reference_rmse for f in figures if f.reference_rmse is not None),
                         None)
        return ((None, "") if reference is None else
                (reference * (1 + gate.max_rmse_increase),
                 f"gate: SavedModel RMSE +{100 * gate.max_rmse_increase:g}%"))
    reference = next((f.reference_accuracy for f in figures
                      if f.reference_accuracy is not None), None)
    return ((None, "") if reference is None else
            (reference - gate.max_accuracy_drop,
             f"gate: SavedModel accuracy - {gate.max_accuracy_drop:g}"))
