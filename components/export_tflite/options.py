"""export_tflite's settings: ExportOptions adds what exporting takes (the mode, or
freeze_quantize's choice, and the agreement gate) to the settings both edge steps share
(common.tflite.options.TFLiteOptions). It imports no NumPy or TensorFlow."""

import dataclasses

from tfkfp.components.common.platform.step_options import setting
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.options import QuantizeInputError, TFLiteOptions, check_examples

AUTO = tflite_modes.AUTO  # here: the mode freeze_quantize chose, read from its quantized model


@dataclasses.dataclass(frozen=True)
class ExportOptions(TFLiteOptions):
    """How export_tflite converts (or takes), validates and gates a model."""

    quantized_dir: str = setting("", "freeze_quantize's tflite_model folder, exported as "
                                     "chosen there; empty: convert here")
    min_agreement: float = setting(0.98, "gate: smallest accepted share of examples with "
                                         "the SavedModel's top class")

    def check(self) -> None:
        if self.quantization != AUTO and self.quantized_dir:
            raise QuantizeInputError(f"give either quantization {self.quantization!r} or "
                                     f"quantized_dir ({self.quantized_dir}), not both: the "
                                     "quantized model already has a mode")
        if self.quantization == AUTO and not self.quantized_dir:
            raise QuantizeInputError("quantization 'auto' exports the mode freeze_quantize "
                                     "chose: pass its quantized model, or name a mode to "
                                     f"convert in (one of {', '.join(tflite_modes.MODES)})")
        check_examples("eval_examples", self.eval_examples)
        if not 0.0 <= self.min_agreement <= 1.0:
            raise QuantizeInputError(f"min_agreement {self.min_agreement} is outside [0, 1]")
