"""freeze_quantize's settings: QuantizeOptions adds the sweep (its modes, budget and latency
timing) and the calibration split to the settings both edge steps share
(common.tflite.options.TFLiteOptions). It imports no NumPy or TensorFlow."""

import dataclasses
from typing import Sequence

from tfkfp.components.common.platform.step_options import setting
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.options import QuantizeInputError, TFLiteOptions, check_examples

AUTO = tflite_modes.AUTO  # here: sweep the modes of ``modes``
LATENCY = ("latency_batch_size", "latency_runs", "latency_seconds")  # common.tflite.latency


@dataclasses.dataclass(frozen=True)
class QuantizeOptions(TFLiteOptions):
    """How freeze_quantize converts, measures and chooses a model."""

    calibration_split: str = setting("train", "the Dataset split calibration examples come "
                                              "from")
    modes: Sequence[str] = setting([], "the modes auto sweeps; empty: those worth their time "
                                       "for the model's kind")
    sweep_seconds: float = setting(900.0, "auto's time budget for the whole sweep, in "
                                          "seconds; 0: no budget")
    latency_batch_size: int = setting(256, "batch size of the per-batch latency figure")
    latency_runs: int = setting(20, "timed calls per latency figure at most (the median is "
                                    "reported)")
    latency_seconds: float = setting(10.0, "seconds each mode's latency figures may take "
                                           "together")

    def check(self) -> None:
        if tflite_modes.check_sweep(self.modes) and self.quantization != AUTO:
            raise QuantizeInputError(f"modes {list(self.modes)} are what quantization 'auto' "
                                     f"sweeps; quantization {self.quantization!r} converts "
                                     "that one mode: give one or the other")
        if not self.sweep_seconds >= 0:  # NaN too
            raise QuantizeInputError(f"sweep_seconds {self.sweep_seconds} is below 0; "
                                     "expected the seconds auto's whole sweep may take, or 0 "
                                     "for no budget")
        if self.latency_batch_size < 1 or self.latency_runs < 1:
            raise QuantizeInputError(f"latency_batch_size {self.latency_batch_size} and "
                                     f"latency_runs {self.latency_runs}: each must be at "
                                     "least 1 (a batch of rows, a count of timed calls)")
        if not self.latency_seconds > 0 or self.latency_seconds == float("inf"):  # NaN too
            raise QuantizeInputError(f"latency_seconds {self.latency_seconds}: expected the "
                                     "seconds (above 0) each mode's latency may be timed "
                                     "for, e.g. 10")
        if self.calibration_examples < 1:
            raise QuantizeInputError(f"calibration_examples {self.calibration_examples}: the "
                                     "calibration set would be empty; expected e.g. 100-500")
        check_examples("eval_examples", self.eval_examples)
