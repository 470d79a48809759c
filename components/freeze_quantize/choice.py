"""Which mode freeze_quantize keeps, from the figures of the modes it measured."""

from typing import Dict, List

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite import parity as tflite_parity
from tfkfp.components.common.tflite.parity import Figures, Gate, QualityGateError


def choose(figures: List[Figures], skipped: Dict[str, str], cut: Dict[str, str],
           quantization: str, gate: Gate, model_dir: str, sweep_seconds: float) -> Figures:
    """The explicit mode, checked against the gate; or auto's smallest mode within the gate
    among those measured in full (QualityGateError naming every mode and why, when none
    is: a mode cut short by the budget is never chosen on part of its figures)."""
    if quantization != tflite_modes.AUTO:
        tflite_parity.check(figures[0], gate,
                            f"quantization {quantization!r} of model {model_dir}")
        return figures[0]
    whole = [f for f in figures if not f.cut_short]
    if not whole:
        raise QualityGateError(_none_measured(model_dir, skipped, cut, sweep_seconds))
    within = [f for f in whole if not tflite_parity.failures(f, gate)]
    if not within:
        tried = "; ".join([f"{f.mode}: {' and '.join(tflite_parity.failures(f, gate))}"
                           for f in whole] + [f"{m}: {why}" for m, why in cut.items()] +
                          [f"{m}: skipped, {why}" for m, why in skipped.items()])
        raise QualityGateError(f"auto: no mode of model {model_dir} passes the gate "
                               f"({tried})")
    return min(within, key=lambda f: (f.size_bytes, f.shortfall))


def _none_measured(model_dir: str, skipped: Dict[str, str], cut: Dict[str, str],
                   sweep_seconds: float) -> str:
    why = "; ".join([f"{m}: {why}" for m, why in cut.items()] +
                    [f"{m}: skipped, {why}" for m, why in skipped.items()])
    if not cut:
        return f"auto: no mode of model {model_dir} was measured ({why})"
    return (f"auto: no mode of model {model_dir} was measured in full within sweep_seconds "
            f"{sweep_seconds:g} ({why}); raise sweep_seconds, or lower eval_examples or "
            "latency_seconds, or name fewer modes")
