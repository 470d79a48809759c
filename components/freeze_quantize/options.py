"""What freeze_quantize refuses before any model is loaded (the pipelines check requests
with it before a run starts). It imports no NumPy or TensorFlow."""

from typing import Sequence

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.options import QuantizeInputError, check_input_layout


def check_options(quantization: str, calibration_examples: int, eval_examples: int,
                  modes: Sequence[str] | None = None, sweep_seconds: float = 0.0,
                  input_layout: str = "packed") -> None:
    """Refuse what cannot work before any work; the pipelines call it before a run starts."""
    tflite_modes.check_mode(quantization)  # a mode, or auto (sweep)
    check_input_layout(input_layout)
    if tflite_modes.check_sweep(modes) and quantization != tflite_modes.AUTO:
        raise QuantizeInputError(f"modes {list(modes)} are what quantization 'auto' sweeps; "
                                 f"quantization {quantization!r} converts that one mode: "
                                 "give one or the other")
    if not sweep_seconds >= 0:  # NaN too
        raise QuantizeInputError(f"sweep_seconds {sweep_seconds} is below 0; expected the "
                                 "seconds auto may spend starting modes, or 0 for no budget")
    if calibration_examples < 1:
        raise QuantizeInputError(f"calibration_examples {calibration_examples}: the "
                                 "calibration set would be empty; expected e.g. 100-500")
    if eval_examples < 1:
        raise QuantizeInputError(f"eval_examples {eval_examples} is below 1")
