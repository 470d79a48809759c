"""What export_tflite refuses before any model is loaded (the pipelines check requests with
it before a run starts). It imports no NumPy or TensorFlow."""

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.options import QuantizeInputError, check_input_layout

AUTO = tflite_modes.AUTO  # here: the mode freeze_quantize chose, read from its quantized model


def check_options(quantization: str, quantized_dir: str, eval_examples: int,
                  min_agreement: float, input_layout: str = "packed") -> None:
    """Refuse what cannot work before any work; the pipelines call it before a run starts."""
    tflite_modes.check_mode(quantization)  # a mode, or auto (freeze_quantize's choice)
    check_input_layout(input_layout)
    if quantization != AUTO and quantized_dir:
        raise QuantizeInputError(f"give either quantization {quantization!r} or quantized_dir "
                                 f"({quantized_dir}), not both: the quantized model already "
                                 "has a mode")
    if quantization == AUTO and not quantized_dir:
        raise QuantizeInputError("quantization 'auto' exports the mode freeze_quantize chose: "
                                 "pass its quantized model, or name a mode to convert in "
                                 f"(one of {', '.join(tflite_modes.MODES)})")
    if eval_examples < 1:
        raise QuantizeInputError(f"eval_examples {eval_examples} is below 1")
    if not 0.0 <= min_agreement <= 1.0:
        raise QuantizeInputError(f"min_agreement {min_agreement} is outside [0, 1]")
