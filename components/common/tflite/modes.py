"""What a quantization mode name means, in one table (``MODES``, in the order freeze_quantize's
sweep tries them): what it does, whether it is calibrated on a representative dataset, whether
its activations are integers, whether ``integer_io`` applies to it, and how it sets up a
``tf.lite.TFLiteConverter``.

common.tflite.convert, common.tflite.feeding, freeze_quantize and export_tflite read the
table here instead of naming modes, and check a name with ``check_mode`` (one error class,
``QuantizationModeError``, naming the allowed values), so adding a mode is a change to this
file only. It imports no TensorFlow at module scope: a mode's ``configure`` imports it when
it runs.

``auto`` (``AUTO``) is not a mode and not in the table: it is the one other value the
components' ``quantization`` parameter takes (``check_mode``'s ``allowed_extra``), and it
means a different thing in each component:

- freeze_quantize: *sweep*. Convert and measure the modes of its ``modes`` parameter, or
  by default the modes worth their time for the model's kind (``default_sweep``: every mode
  but one whose kernels for the model's ops are LiteRT's slow reference ones), in table
  order, skip one that fails to convert or run in LiteRT or would not end within the
  sweep's time budget, and keep the smallest model that passes the gate among the modes
  measured in full (a mode the budget cut short is reported, never chosen).

Why a CNN's default sweep leaves int16x8 out (measured on 2 cores, LiteRT 2.x): int16x8
convolutions run on reference kernels, so a 4-layer CNN on 128x128 images took 173 ms per
image in int16x8 against 1.1 ms in int8 (and InceptionV3 4.3 s per image, most of a 24-minute
sweep), while an MLP took 0.03 ms against 0.01 ms. Name int16x8 in ``modes`` to sweep it.
- export_tflite: *take*. Convert nothing: export the model of ``quantized_dir`` (the
  ``tflite_model`` folder freeze_quantize wrote, common.tflite.quantized) in the mode
  freeze_quantize chose there, which it needs.
"""

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

from tfkfp.components.common.tflite.options import AUTO, QuantizeInputError


class QuantizationModeError(QuantizeInputError):
    """A quantization name that is not a mode of the table (nor an allowed extra such as
    ``auto``); the message names the allowed values."""


def _float32(converter) -> List[Any]:
    import tensorflow as tf

    return [tf.lite.OpsSet.TFLITE_BUILTINS]


def _dynamic(converter) -> List[Any]:
    import tensorflow as tf

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return [tf.lite.OpsSet.TFLITE_BUILTINS]


def _float16(converter) -> List[Any]:
    import tensorflow as tf

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return [tf.lite.OpsSet.TFLITE_BUILTINS]


def _int8(converter) -> List[Any]:
    import tensorflow as tf

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS]


def _int16x8(converter) -> List[Any]:
    import tensorflow as tf

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS]


CONVOLUTIONS = ("Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput")


@dataclasses.dataclass(frozen=True)
class Mode:
    """One quantization mode's meaning. Field defaults describe a mode that quantizes
    without calibration and keeps float activations."""

    name: str
    does: str  # what it does, in one line
    # Sets up a tf.lite.TFLiteConverter for the mode (optimizations, supported types) and
    # returns the op sets it converts to; common.tflite.convert adds the rest.
    configure: Callable[[Any], List[Any]]
    calibrated: bool = False  # needs a representative dataset (calibration examples)
    # Activations are integers: a float input may be quantized at the model's entry, where a
    # NaN is lost (common.tflite.feeding says to feed the fill in place of a gap).
    integer_activations: bool = False
    integer_io: bool = False  # integer_io=True makes float inputs/outputs int8 (else ignored)
    quantized: bool = True  # False: the float32 model, the size the others are compared with
    # TensorFlow op types whose kernels in this mode are LiteRT's reference ones: the
    # default sweep leaves the mode out for a model holding any of them (see the module doc).
    slow_on: Tuple[str, ...] = ()


MODES: Dict[str, Mode] = {m.name: m for m in (
    Mode("none", "float32: no quantization", _float32, quantized=False),
    Mode("dynamic", "int8 weights, float activations (dynamic range)", _dynamic),
    Mode("float16", "float16 weights", _float16),
    Mode("int8", "int8 weights and activations, calibrated on a representative dataset",
         _int8, calibrated=True, integer_activations=True, integer_io=True),
    Mode("int16x8", "int16 activations and int8 weights, calibrated on a representative "
         "dataset", _int16x8, calibrated=True, integer_activations=True, slow_on=CONVOLUTIONS),
)}


def check_mode(name: str, allowed_extra: Sequence[str] = (AUTO,),
               what: str = "quantization") -> str:
    """``name`` when it is a mode of the table or one of ``allowed_extra``; else a
    QuantizationModeError naming the allowed values."""
    allowed = (*MODES, *allowed_extra)
    if name not in allowed:
        raise QuantizationModeError(f"{what} {name!r} is not one of {', '.join(allowed)}")
    return name


def with_auto() -> Tuple[str, ...]:
    """What a step's quantization setting takes: a mode of the table, or auto."""
    return (*MODES, AUTO)


def get(name: str) -> Mode:
    """The table entry for a mode name (``auto`` refused: it is no mode)."""
    return MODES[check_mode(name, allowed_extra=())]


def check_sweep(names: Sequence[str] | None, what: str = "modes") -> Tuple[str, ...]:
    """The modes a sweep was asked for, in table order; empty (None or no names): the
    default for the model's kind, decided once its ops are known (``default_sweep``). A name
    that is not a mode of the table is a QuantizationModeError naming the allowed values."""
    names = list(names or ())
    unknown = sorted(set(names) - set(MODES))
    if unknown:
        raise QuantizationModeError(f"{what} {names}: {', '.join(map(repr, unknown))} "
                                    f"not a mode; expected some of {', '.join(MODES)} "
                                    "(none: the default for the model's kind)")
    return tuple(m for m in MODES if m in names)


def default_sweep(op_types: Iterable[str]) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(the modes worth sweeping for a model holding ``op_types``, {mode left out: why})."""
    ops = set(op_types)
    swept, left_out = [], {}
    for mode in MODES.values():
        slow = sorted(ops.intersection(mode.slow_on))
        if slow:
            left_out[mode.name] = (f"not in the default sweep: the model has {', '.join(slow)}, "
                                   f"whose {mode.name} kernels in LiteRT are slow reference "
                                   f"ones; name {mode.name} in modes to sweep it")
        else:
            swept.append(mode.name)
    return tuple(swept), left_out
