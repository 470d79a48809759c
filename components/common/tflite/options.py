"""What a quantization request is refused for before any model is loaded: its error class,
the settings export_tflite and freeze_quantize share (``TFLiteOptions``, the base of their
options classes) and the input mapping's form. Nothing here imports NumPy or TensorFlow, so
the pipelines refuse a bad request before a run in the time a typo deserves."""

import dataclasses
import json
from typing import ClassVar, Dict

from tfkfp.components.common.platform.step_options import StepOptions, setting

# how a bundle's model takes a tabular row (common.tflite.packing): one input per dtype block
# of scalar numeric columns, or one input per column as the SavedModel's signature takes them
PACKED, COLUMNS = "packed", "columns"
INPUT_LAYOUTS = (PACKED, COLUMNS)
# not a mode: freeze_quantize sweeps the modes; export_tflite takes freeze_quantize's choice
AUTO = "auto"


class QuantizeInputError(ValueError):
    """Bad input or options: the message names the path, signature, column or value."""


@dataclasses.dataclass(frozen=True)
class TFLiteOptions(StepOptions):
    """Base of export_tflite's and freeze_quantize's options: the settings both steps take,
    declared here once (how the model is fed and converted, and the gate a converted model
    must pass), and their one error class. ``quantization`` is checked by the modes table's
    own check first (one error class,
    common.tflite.modes.QuantizationModeError, naming the allowed values), then the fields'
    choices and the step's ``check``; the input mapping's form last."""

    error: ClassVar = QuantizeInputError

    quantization: str = setting(AUTO, "a mode of common.tflite.modes to convert in; auto: "
                                      "freeze_quantize sweeps the modes and keeps the "
                                      "smallest within the gate, export_tflite exports the "
                                      "mode freeze_quantize chose (its quantized_dir)",
                                lambda: _modes().with_auto())
    signature: str = setting("", "the signature converted and compared; empty: serving_raw "
                                 "when the model has it, else serving_default")
    input_mapping: str | Dict[str, str] | None = setting(
        {}, "signature input name -> Dataset column, for inputs whose name is not a column "
            "(a dict or its JSON)")
    input_layout: str = setting(PACKED, "packed: one [batch, n] input per dtype of the "
                                        "numeric columns; columns: one input per column",
                                INPUT_LAYOUTS)
    integer_io: bool = setting(False, "int8 only: float inputs and outputs become int8 too")
    select_tf_ops: bool = setting(False, "allow TensorFlow (Flex) ops with no TFLite builtin")
    calibration_examples: int = setting(300, "representative examples (train split) for "
                                             "int8 and int16x8 (100-500)")
    eval_examples: int = setting(1000, "held-out examples of eval_split compared in LiteRT")
    eval_split: str = setting("eval", "the Dataset split the examples are compared on")
    max_accuracy_drop: float = setting(0.01, "gate: largest accepted accuracy drop, as a "
                                             "fraction (0.01: one point)")
    max_relative_error: float = setting(0.05, "gate: largest accepted relative error of "
                                              "outputs that are neither class scores nor a "
                                              "regressor's value")
    max_rmse_increase: float = setting(0.05, "gate: a regressor's largest accepted RMSE "
                                             "increase over the SavedModel's, relative")

    def __post_init__(self) -> None:
        from tfkfp.components.common.tflite import modes  # it imports this module

        modes.check_mode(self.quantization)
        super().__post_init__()
        parse_mapping(self.input_mapping)


def _modes():
    from tfkfp.components.common.tflite import modes  # it imports this module

    return modes


def check_examples(name: str, count: int) -> None:
    """An example count (eval_examples, calibration_examples) must be at least 1."""
    if count < 1:
        raise QuantizeInputError(f"{name} {count} is below 1")


def parse_mapping(input_mapping: str | Dict[str, str] | None) -> Dict[str, str]:
    """``input_mapping`` as a dict; JSON text (as a pipeline passes it) is parsed."""
    mapping = input_mapping
    if not mapping:
        return {}
    if isinstance(mapping, str):
        try:
            mapping = json.loads(mapping)
        except json.JSONDecodeError as err:
            raise QuantizeInputError(f"input_mapping {mapping!r} is not JSON: {err}; expected "
                                     'an object like {"input_1": "image"}') from err
    if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise QuantizeInputError(f"input_mapping {mapping!r}: expected an object of signature "
                                 "input name -> Dataset column name, both strings")
    return dict(mapping)
