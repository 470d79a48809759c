"""A TFLite model or bundle as a ``Predictor`` (common.model.predictor loads it) in LiteRT:
its ``serving_raw`` signature runner, quantized inputs and outputs converted, the gaps of
imputed inputs filled as signature.json says, packed inputs fed by column or as one matrix."""

import dataclasses
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.data.missing import fill_gaps, fills_from_signature
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.model.bundle import (
    LABELS_FILE,
    SIGNATURE_FILE,
    TFLITE,
    Bundle,
    BundleError,
    task_in,
)
from tfkfp.components.common.model.runtime import (
    BLOCKS,
    InputSpec,
    ModelInputError,
    Predictor,
    aliases_of,
    column_of,
)
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import threads_or_cpus


def load_tflite(path: str, labels_uri: str, threads: int) -> Predictor:
    from ai_edge_litert.interpreter import Interpreter

    bundle = Bundle.of_model_file(path)  # the files beside it, where there are any
    with uris.open_file(path) as f:
        content = f.read()
    interpreter = Interpreter(model_content=content, num_threads=threads_or_cpus(threads))
    signatures = interpreter.get_signature_list()
    if savedmodel.SIGNATURE_RAW not in signatures:
        raise ModelInputError(f"TFLite model {path} has signatures {sorted(signatures)}; "
                              f"expected {savedmodel.SIGNATURE_RAW!r} (converted from the "
                              "SavedModel's raw-feature signature)")
    runner = interpreter.get_signature_runner(savedmodel.SIGNATURE_RAW)
    signature, schema = _bundle_signature(bundle), bundle.schema()
    packed = _packed_inputs(path, signature, runner.get_input_details())
    details = {column_of(schema, t): d for t, d in runner.get_input_details().items()
               if t not in packed}
    tensors = {column: _tensor_of(schema, column) for column in details}
    inputs = {name: _tflite_input(d) for name, d in details.items()}
    for block in packed.values():
        inputs.update((c, InputSpec(block.dtype, ())) for c in block.columns)
    outputs = runner.get_output_details()
    # the task export_tflite recorded in signature.json; a bundle without it (or a bare
    # .tflite file): what its output names suggest
    task = task_in(signature) or savedmodel.task_of_outputs(outputs)
    output_name = "value" if task == "regression" else "probabilities"
    if output_name not in outputs:
        raise ModelInputError(f"TFLite model {path} is a {task} model but has outputs "
                              f"{sorted(outputs)}; expected {output_name!r}")
    labels = _tflite_labels(path, bundle, labels_uri) if task == "classification" else []
    output = outputs[output_name]
    fills = _bundle_fills(bundle, signature)

    def predict(features: Dict[str, np.ndarray]) -> np.ndarray:
        feed = {tensors[name]: _quantize(fill_gaps(features[name], fills.get(tensors[name])),
                                         details[name]) for name in details}
        for block in packed.values():
            feed[block.name] = _quantize(fill_gaps(block.matrix(features),
                                                   fills.get(block.name)), block.detail)
        return _dequantize(runner(**feed)[output_name], output)

    # a packed column is named by its tensor name too, as an input of its own is
    named = {**tensors, **{c: _tensor_of(schema, c) for b in packed.values() for c in b.columns}}
    return Predictor(TFLITE, path, inputs, labels, predict, schema, handle=interpreter,
                     task=task, aliases=aliases_of(named),
                     blocks={b.dtype: b.columns for b in packed.values()})


@dataclasses.dataclass(frozen=True)
class _PackedInput:
    """An input of a bundle in the packed layout: one [rows, n] matrix of scalar columns,
    which a Predictor takes by column or as ``BLOCKS[dtype]``."""

    name: str
    dtype: str  # the columns' (float32 | int64), the Predictor's block key
    columns: Tuple[str, ...]
    detail: Dict  # the input's LiteRT details

    def matrix(self, features: Dict) -> np.ndarray:
        given = features.get(BLOCKS[self.dtype])
        matrix = given if given is not None else np.stack(
            [np.asarray(features[c]).reshape(-1) for c in self.columns], axis=1)
        if np.dtype(self.detail["dtype"]) == np.int32 and matrix.size:
            _check_int32(matrix, self)
        return matrix


def _check_int32(matrix: np.ndarray, block: _PackedInput) -> None:
    info = np.iinfo(np.int32)
    outside = (matrix < info.min) | (matrix > info.max)
    if outside.any():
        row, at = np.argwhere(outside)[0]
        raise ModelInputError(f"row {row}, column {block.columns[at]!r}: {matrix[row, at]} "
                              f"does not fit the bundle's int32 input {block.name!r} (int32 "
                              f"holds {info.min} to {info.max}); export it with input_layout "
                              "'columns' to feed it as int64")


def _packed_inputs(path: str, signature: Dict | None, details: Dict) -> Dict[str, _PackedInput]:
    """The packed inputs signature.json describes (an input with ``columns``), by name."""
    out = {}
    for name, entry in ((signature or {}).get("inputs") or {}).items():
        if not isinstance(entry, dict) or "columns" not in entry:
            continue
        if name not in details:
            raise ModelInputError(f"TFLite model {path}: {SIGNATURE_FILE} describes a packed "
                                  f"input {name!r} the model does not have; it has "
                                  f"{sorted(details)}")
        dtype = "float32" if np.dtype(details[name]["dtype"]).kind == "f" or \
            _scale(details[name])[0] else "int64"
        out[name] = _PackedInput(name, dtype, tuple(entry["columns"]), details[name])
    return out


def _tensor_of(schema: Schema | None, column: str) -> str:
    return schema.column(column).tensor if schema is not None and column in schema.names \
        else column


def _tflite_labels(path: str, bundle: Bundle, labels_uri: str) -> List[str]:
    labels = bundle.labels(labels_uri)
    if labels is None:
        raise ModelInputError(f"TFLite model {path} needs its class names: no labels file "
                              f"at {labels_uri or bundle.path(LABELS_FILE)} (one class per "
                              "line)")
    return labels


def _bundle_signature(bundle: Bundle) -> Dict | None:
    try:
        return bundle.signature()
    except BundleError as err:
        raise ModelInputError(str(err)) from err


def _bundle_fills(bundle: Bundle, signature: Dict | None) -> Dict[str, np.ndarray]:
    """The gap fills of the bundle's signature.json, if there is one."""
    if signature is None:
        return {}
    try:
        return fills_from_signature(signature)
    except (ValueError, AttributeError, TypeError) as err:
        raise ModelInputError(f"{bundle.path(SIGNATURE_FILE)}: not a readable TFLite bundle "
                              f"signature ({err}); expected the signature.json export_tflite "
                              "writes") from err


def _scale(detail: Dict) -> Tuple[float, int]:
    scale, zero = detail.get("quantization", (0.0, 0))
    return float(scale), int(zero)


def _tflite_input(detail: Dict) -> InputSpec:
    """What the data must hold: quantized inputs take the real (float32) values."""
    dtype = np.dtype(detail["dtype"])
    shape = tuple(int(x) for x in detail["shape_signature"][1:])
    if _scale(detail)[0] and dtype.kind in "iu":
        return InputSpec("float32", shape)
    return InputSpec(datatypes.from_numpy(dtype) or str(dtype), shape)


def _quantize(values: np.ndarray, detail: Dict) -> np.ndarray:
    scale, zero = _scale(detail)
    dtype = np.dtype(detail["dtype"])
    if scale and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.round(values / scale + zero), info.min, info.max).astype(dtype)
    return values.astype(dtype) if values.dtype != dtype and dtype.kind in "fiu" else values


def _dequantize(values: np.ndarray, detail: Dict) -> np.ndarray:
    scale, zero = _scale(detail)
    if scale and values.dtype.kind in "iu":
        return (values.astype(np.float32) - zero) * scale
    return values
