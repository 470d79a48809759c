"""The model runtime: a tfkfp SavedModel or a TFLite model behind one API, the ``Predictor``.

batch_predict, serve and deploy_model load and call models through it, so a row gets the
same answer in a batch, online and at the deploy gate. Both kinds are called on raw feature
columns (the ``serving_raw`` signature, which is also what the TFLite model was converted
from): records are parsed once by the reader, so key columns can be carried through and a bad
record can be told apart from its batch. String columns are fed as they are read (UTF-8
bytes; the model looks them up itself). A TFLite bundle's ``signature.json`` gives the fill
of each imputed float input: a gap (NaN) is fed as it, since a NaN does not survive a
quantized input (common.data.missing). The task (classification or regression) is read from
the artifact: tfkfp_model.json of a SavedModel, signature.json of a bundle
(common.model.bundle). Callers inject a ``Predictor``, so tests and benchmarks can hand them
a small real one. A model that cannot be loaded, or does not fit
the data, is refused with ``ModelInputError`` naming what was found and what was expected.
"""

import dataclasses
from typing import Callable, Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data.missing import fill_gaps, fills_from_signature
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.model.bundle import (
    LABELS_FILE,
    MODEL_FILE,
    SAVEDMODEL,
    SIGNATURE_FILE,
    TFLITE,
    Bundle,
    BundleError,
    kind_of,
    neither,
    task_in,
)
from tfkfp.components.common.platform import fetch_cache, uris
from tfkfp.components.common.platform.cpus import tensorflow_threads, threads_or_cpus

_NUMPY_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.int64): "int64",
                 np.dtype(np.bytes_): "string", np.dtype(np.object_): "string"}


class ModelInputError(ValueError):
    """A model that cannot be loaded, or data, options or outputs that do not fit it; the
    message names what was found and what was expected."""


@dataclasses.dataclass(frozen=True)
class InputSpec:
    dtype: str  # float32 | int64 | string
    shape: Tuple[int, ...]  # per example


class _Block:
    """The key under which ``predict`` also takes a Predictor's block of scalar columns of
    one dtype as one ``[rows, n]`` matrix (an object, so no column name can be it)."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"BLOCK[{self.dtype}]"


BLOCKS = {"float32": _Block("float32"), "int64": _Block("int64")}  # dtype -> its key
FLOAT_BLOCK, INT64_BLOCK = BLOCKS["float32"], BLOCKS["int64"]


@dataclasses.dataclass
class Predictor:
    """A loaded model: ``predict({input: array})`` gives a classifier's probabilities
    [rows, classes], or a regressor's values [rows]. Where ``blocks`` names inputs of a
    dtype, ``predict`` also takes them as one matrix under ``BLOCKS[dtype]``, columns in that
    order (a server decodes them so, and batches requests with one concatenation per block
    instead of one per column)."""

    kind: str  # savedmodel | tflite
    uri: str
    inputs: Dict[str, InputSpec]
    labels: List[str]  # class names; none for a regressor
    predict: Callable[[Dict[str, np.ndarray]], np.ndarray]
    schema: Schema | None = None  # the schema it was trained on, when the model carries it
    handle: object = None  # the loaded model or interpreter, kept alive with the predictor
    task: str = "classification"  # or regression
    blocks: Dict[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)  # by dtype
    # {the model's own input name: the column it takes} where they differ (a column whose
    # name TensorFlow cannot take, see common.data.schema); ``inputs`` are keyed by the column
    aliases: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def regressor(self) -> bool:
        return self.task == "regression"

    def describe(self) -> Dict:
        return {"kind": self.kind, "uri": self.uri, "task": self.task,
                "classes": len(self.labels), "inputs": len(self.inputs)}


def load_predictor(model_uri: str, labels_uri: str = "", threads: int = 0) -> Predictor:
    """Load a tfkfp SavedModel directory, a TFLite bundle directory or a ``.tflite`` file.

    Args:
        model_uri: SavedModel directory (with ``saved_model.pb``), a directory holding
            ``model.tflite`` (labels from ``labels.txt`` beside it), or a ``.tflite`` path.
        labels_uri: labels file (one class name per line) for a bare ``.tflite`` path.
        threads: LiteRT interpreter or TensorFlow threads (0: one per CPU of the container).
    """
    if not uris.exists(model_uri):
        raise ModelInputError(f"model {model_uri} does not exist")
    kind = kind_of(model_uri)
    if kind == SAVEDMODEL:
        return _load_savedmodel(model_uri, threads)
    if kind == TFLITE:
        return _load_tflite(uris.join(model_uri, MODEL_FILE), labels_uri, threads)
    if uris.isdir(model_uri):
        raise ModelInputError(neither(model_uri))
    if model_uri.endswith(".tflite"):
        return _load_tflite(model_uri, labels_uri, threads)
    raise ModelInputError(f"model {model_uri} is not a SavedModel directory, a TFLite bundle "
                          "directory or a .tflite file")


def _load_savedmodel(model_dir: str, threads: int) -> Predictor:
    import tensorflow as tf

    tensorflow_threads(threads)
    with fetch_cache.readable_tree(model_dir) as local:  # s3://: loaded from a local copy
        loaded = tf.saved_model.load(local)
    signatures = sorted(loaded.signatures.keys())
    if savedmodel.SIGNATURE_RAW not in signatures:
        raise ModelInputError(
            f"SavedModel {model_dir} has signatures {signatures}; batch_predict needs the "
            f"tfkfp {savedmodel.SIGNATURE_RAW!r} signature (one input per feature column), as "
            "written by common.model.savedmodel.export_model")
    fn = loaded.signatures[savedmodel.SIGNATURE_RAW]
    schema = savedmodel.load_schema(model_dir)
    tensors = {c.name: c.tensor for c in schema.features}
    # the signature's inputs, keyed by the column each takes
    specs = {_column_of(schema, t): spec for t, spec in fn.structured_input_signature[1].items()}
    inputs = {name: InputSpec(spec.dtype.name if spec.dtype != tf.string else "string",
                              tuple(spec.shape[1:].as_list())) for name, spec in specs.items()}
    # the task train recorded; a model without tfkfp_model.json's "task": its output names
    task = savedmodel.recorded_task(model_dir) or savedmodel.task_of_outputs(
        fn.structured_outputs)
    output = "value" if task == "regression" else "probabilities"

    def call(columns: Dict) -> Dict:
        return fn(**{tensors.get(name, name): value for name, value in columns.items()})

    def per_column(features: Dict[str, np.ndarray]) -> np.ndarray:
        return call({name: tf.constant(features[name]) for name in inputs})[output].numpy()

    blocks = {}
    for dtype in BLOCKS:  # scalar columns of one dtype, two or more: one matrix each
        names = [n for n, s in specs.items() if s.dtype.name == dtype and s.shape.rank == 1]
        if len(names) >= 2:
            blocks[dtype] = tuple(names)
    predict = _packed_call(call, specs, blocks, per_column, output) if blocks else per_column
    labels = savedmodel.load_labels(model_dir) if task == "classification" else []
    return Predictor(SAVEDMODEL, model_dir, inputs, labels, predict, schema, handle=loaded,
                     task=task, blocks=blocks, aliases=_aliases(tensors))


def _column_of(schema: Schema | None, tensor: str) -> str:
    """The column a model input takes: the schema's column of that tensor name, else the
    input's own name (a model made elsewhere)."""
    column = schema.column_of_tensor(tensor) if schema is not None else None
    return column.name if column is not None else tensor


def _aliases(tensors: Dict[str, str]) -> Dict[str, str]:
    return {t: c for c, t in tensors.items() if t != c}


def _packed_call(fn: Callable, specs: Dict, blocks: Dict[str, Tuple[str, ...]],
                 per_column: Callable, output: str = "probabilities") -> Callable:
    """``predict`` (the signature's ``output``) with one Python-to-TensorFlow crossing per
    block of scalar columns of one dtype, given one by one or as the ``BLOCKS[dtype]``
    matrix.

    ``fn`` calls the signature on a dict of tensors keyed as ``specs`` (by column).
    Calling the signature costs a fixed amount of Python per input (most of a small batch's
    time for a wide table), so the scalar float32 columns, and the scalar int64 ones, go in
    as one ``[rows, n]`` matrix each, split back into columns inside a tf.function that
    calls the signature; the other inputs are passed as they are. The model computes exactly
    what it computes on the columns. Features a matrix cannot take as they are (another
    dtype or shape, ragged rows) go through ``per_column``, the signature called one input
    per column, as before.
    """
    import tensorflow as tf

    grouped = {n for names in blocks.values() for n in names}
    others = [n for n in specs if n not in grouped]

    # '__' keeps the matrices' names apart from every input's (common.data.schema)
    @tf.function(input_signature=[tf.TensorSpec([None, len(names)], tf.as_dtype(dtype),
                                                name=f"packed__{dtype}")
                                  for dtype, names in blocks.items()]
                 + [specs[n] for n in others])
    def call(*tensors):
        columns = {}
        for matrix, names in zip(tensors, blocks.values()):
            columns.update(zip(names, tf.unstack(matrix, num=len(names), axis=1)))
        columns.update(zip(others, tensors[len(blocks):]))
        return fn(columns)[output]

    concrete = call.get_concrete_function()

    def predict(features: Dict[str, np.ndarray]) -> np.ndarray:
        packed = to_blocks(features, blocks)
        if packed is None:  # the per-column call takes them, or names what does not fit
            return per_column(features)
        return concrete(*[tf.constant(packed[BLOCKS[d]]) for d in blocks],
                        *[tf.constant(packed[n]) for n in others]).numpy()

    return predict


def to_blocks(features: Dict, blocks: Dict[str, Tuple[str, ...]], cast: bool = False
              ) -> Dict | None:
    """``features`` with each block's columns stacked into one ``[rows, n]`` matrix under
    ``BLOCKS[dtype]`` (a block already there is kept); None when a column is not a [rows]
    array of the block's dtype (with ``cast``, of any dtype: converted)."""
    out, grouped = {}, set()
    for dtype, names in blocks.items():
        grouped.update(names)
        if BLOCKS[dtype] in features:
            continue
        columns = [features[n] for n in names]
        rows = len(columns[0])
        if any(not isinstance(c, np.ndarray) or c.shape != (rows,)
               or (c.dtype != dtype and not cast) for c in columns):
            return None
        out[BLOCKS[dtype]] = np.stack(columns, axis=1).astype(dtype, copy=False)
    out.update((n, v) for n, v in features.items() if n not in grouped)
    return out


def _load_tflite(path: str, labels_uri: str, threads: int) -> Predictor:
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
    details = {_column_of(schema, t): d for t, d in runner.get_input_details().items()
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
                     task=task, aliases=_aliases(named),
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
    return InputSpec(_NUMPY_DTYPES.get(dtype, str(dtype)), shape)


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
