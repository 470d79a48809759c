"""SavedModel signature -> TFLite flatbuffer, in one of the quantization modes (for
freeze_quantize, which tries them, and export_tflite, which converts in one).

The modes, what each does and how it sets up the converter are one table,
common.tflite.modes (``none``, ``dynamic``, ``float16``, ``int8``, ``int16x8``); this module
adds what every mode shares: the representative dataset of a calibrated mode, int8 inputs and
outputs where ``integer_io`` applies, and ``select_tf_ops``. Ops that cannot be quantized
(casts, argmax, the label gather) stay in float or integer builtins; ``select_tf_ops`` lets
ops with no builtin fall back to TensorFlow kernels (Flex), at the price of a larger runtime
in the app.

``prepare`` freezes the signature first (common.tflite.graph): its lookup tables, the fills of
imputed inputs and the vocabularies of string inputs come from there. A signature with a
Keras one-hot (``DenseBincount``, a Flex-only op) is converted from that frozen graph, the
one-hot rewritten to builtins and the tables attached again, saved as a SavedModel
(``convertible``); any other straight from its SavedModel, tables included.
"""

import contextlib
import dataclasses
import re
import tempfile
from typing import Callable, Dict, Iterator, List

import numpy as np

from tfkfp.components.common.data import missing
from tfkfp.components.common.tflite import feeding as tflite_feeding
from tfkfp.components.common.tflite import graph as tflite_graph
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite import vectorise
from tfkfp.components.common.tflite.feeding import Feeding
from tfkfp.components.common.tflite.inputs import fixed_batches
from tfkfp.components.common.tflite.packing import Packing


class ConversionError(RuntimeError):
    """The converter refused the model; the message names the ops and the option to try."""


@dataclasses.dataclass(frozen=True)
class Prepared:
    frozen: tflite_graph.FrozenSignature
    feeding: Feeding


def prepare(fn) -> Prepared:
    """Freeze a signature function and read how its inputs are fed."""
    frozen = tflite_graph.freeze_signature(fn)
    return Prepared(frozen, tflite_feeding.from_frozen(frozen))


@contextlib.contextmanager
def convertible(model_dir: str, signature: str, fn, prepared: Prepared,
                packing: Packing | None = None) -> Iterator[str]:
    """The SavedModel directory to convert: model_dir, or the rewritten frozen graph (with
    ``packing``, taking its blocks: common.tflite.vectorise) saved in a temporary directory
    for as long as the context lasts."""
    if not prepared.frozen.needs_rebuild and not packing:
        yield model_dir
        return
    frozen, specs = prepared.frozen, None
    if packing:
        frozen, specs = vectorise.packed_signature(frozen, packing,
                                                   dict(fn.structured_input_signature[1]))
    with tempfile.TemporaryDirectory(prefix="tfkfp-tflite-") as tmp:
        yield tflite_graph.write_convertible(frozen, signature, fn, tmp, specs)


def convert(model_dir: str, signature: str, mode: str,
            representative: Callable[[], Iterator[Dict[str, np.ndarray]]] | None = None,
            integer_io: bool = False, select_tf_ops: bool = False, source: str = "",
            packed: bool = False) -> bytes:
    """Convert one signature of a SavedModel to a .tflite flatbuffer.

    Args:
        model_dir: the SavedModel directory.
        signature: the signature to convert (its inputs become the model's inputs).
        mode: a mode of common.tflite.modes.MODES.
        representative: yields dicts of single-example input arrays, for a calibrated mode.
        integer_io: a mode that allows it (int8): float inputs and outputs become int8 too.
        select_tf_ops: allow TensorFlow ops that have no TFLite builtin (Flex).
        source: the SavedModel actually read (see ``convertible``); default model_dir, which
            errors name either way.
        packed: the source takes packed blocks (``convertible`` with a packing): int8 with
            float inputs keeps the blocks' preprocessing in float (``_int8_keeping_float``).
    """
    import tensorflow as tf

    entry = tflite_modes.get(mode)
    converter = tf.lite.TFLiteConverter.from_saved_model(source or model_dir,
                                                         signature_keys=[signature])
    ops: List = list(entry.configure(converter))
    if entry.calibrated:
        if representative is None:
            raise ValueError(f"mode {mode!r} needs a representative dataset")
        converter.representative_dataset = representative
    if entry.integer_io and integer_io:
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    if select_tf_ops:
        ops.append(tf.lite.OpsSet.SELECT_TF_OPS)
    converter.target_spec.supported_ops = ops
    try:
        if packed and entry.integer_io and not integer_io:
            return _int8_keeping_float(converter)
        return converter.convert()
    except Exception as err:  # the converter raises ConverterError and plain exceptions
        raise conversion_error(err, model_dir, signature, mode, select_tf_ops) from err


def _int8_keeping_float(converter) -> bytes:
    """int8 with the packed blocks' preprocessing (common.tflite.vectorise's nodes) left in
    float. A block holds columns of very different ranges (e.g. areas in thousands beside
    ratios in hundredths), and an int8 tensor has one scale: quantized as it comes in, most
    columns would round to a few values. So the block is normalised in float and quantized
    after, as the columns layout quantizes each column after its own normalisation. The
    converter calibrates, then its own MLIR quantizer runs with those nodes denylisted (as
    TensorFlow's QuantizationDebugger runs it); the multiplication of the normalisation is
    kept out of the next layer's weights, where it would leave the layer's int8 input
    unnormalised."""
    from tensorflow.lite.python import convert as tf_lite_convert

    converter._experimental_disable_fuse_mul_and_fc = True
    converter._experimental_calibrate_only = True
    calibrated = converter.convert()
    return tf_lite_convert.mlir_quantize(
        calibrated, disable_per_channel=converter._experimental_disable_per_channel,
        denylisted_nodes=vectorise.float_nodes(calibrated))


def unsupported_ops(message: str) -> List[str]:
    """Op names the converter said it could not convert, from its error text."""
    found = re.findall(r"'tf\.(\w+)' op is neither a custom op nor a flex op", message)
    for listed in re.findall(r"(?:Custom|Flex|TF Select) ops: ([\w, .]+)", message):
        found += [name.strip() for name in listed.split(",") if name.strip()]
    return sorted(set(found))


def conversion_error(err: Exception, model_dir: str, signature: str, mode: str,
                     select_tf_ops: bool) -> ConversionError:
    message = str(err)
    ops = unsupported_ops(message)
    where = f"converting signature {signature!r} of {model_dir} to TFLite (mode {mode!r})"
    if not ops:
        tail = message.strip().splitlines()[-3:]
        return ConversionError(f"{where} failed: {' / '.join(tail)[-1000:]}")
    if select_tf_ops or ("NEEDS_CUSTOM_OPS" in message and "NEEDS_FLEX_OPS" not in message):
        hint = ("they are not available as TensorFlow (Flex) ops either; replace them in the "
                "model or register custom ops")
    else:
        hint = ("set select_tf_ops=True (converter option SELECT_TF_OPS) to run them with "
                "TensorFlow kernels; the app then needs the Flex delegate")
    return ConversionError(f"{where} failed: op(s) {', '.join(ops)} have no TFLite builtin "
                           f"kernel; {hint}")


def representative_dataset(features: Dict[str, np.ndarray],
                           fills: Dict[str, np.ndarray] | None = None,
                           fixed_batch: int | None = None
                           ) -> Callable[[], Iterator[Dict[str, np.ndarray]]]:
    """A generator factory yielding one example at a time (a model's fixed batch at a time),
    as the converter calibrates. Gaps (NaN) are replaced by the model's fills: a NaN would
    spoil the calibrated ranges."""
    features = {name: missing.fill_gaps(values, (fills or {}).get(name))
                for name, values in features.items()}

    def generate() -> Iterator[Dict[str, np.ndarray]]:
        for batch, _ in fixed_batches(features, 1, fixed_batch):
            yield batch

    return generate
