"""What freeze_quantize refuses before any model is loaded (the pipelines check requests
with it before a run starts). It imports no NumPy or TensorFlow."""

from typing import Sequence

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.options import QuantizeInputError, check_input_layout


def check_options(quantization: str, calibration_examples: int, eval_examples: int,
                  modes: Sequence[str] | None = None, sweep_seconds: float = 0.0,
                  input_layout: str = "packed", latency_batch_size: int = 256,
                  latency_runs: int = 20, latency_seconds: float = 10.0) -> None:
    """Refuse what cannot work before any work; the pipelines call it before a run starts."""
    tflite_modes.check_mode(quantization)  # a mode, or auto (sweep)
    check_input_layout(input_layout)
    if tflite_modes.check_sweep(modes) and quantization != tflite_modes.AUTO:
        raise QuantizeInputError(f"modes {list(modes)} are what quantization 'auto' sweeps; "
                                 f"quantization {quantization!r} converts that one mode: "
                                 "give one or the other")
    if not sweep_seconds >= 0:  # NaN too
        raise QuantizeInputError(f"sweep_seconds {sweep_seconds} is below 0; expected the "
                                 "seconds auto's whole sweep may take, or 0 for no budget")
    _check_latency(latency_batch_size, latency_runs, latency_seconds)
    if calibration_examples < 1:
        raise QuantizeInputError(f"calibration_examples {calibration_examples}: the "
                                 "calibration set would be empty; expected e.g. 100-500")
    if eval_examples < 1:
        raise QuantizeInputError(f"eval_examples {eval_examples} is below 1")


def _check_latency(batch_size: int, runs: int, seconds: float) -> None:
    if batch_size < 1 or runs < 1:
        raise QuantizeInputError(f"latency_batch_size {batch_size} and latency_runs {runs}: "
                                 "each must be at least 1 (a batch of rows, a count of "
                                 "timed calls)")
    if not seconds > 0 or seconds == float("inf"):  # NaN too
        raise QuantizeInputError(f"latency_seconds {seconds}: expected the seconds (above 0) "
                                 "each mode's latency may be timed for, e.g. 10")
