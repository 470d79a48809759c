"""Requests in, answers out: KServe v1 instances and Open Inference Protocol (v2) tensors.

A v1 instance is a row ``{"column": value, ...}`` with one entry per model input, as in a JSON
Lines file for batch prediction (a column named as in the data, or by its tensor name; a string
value may be sent as TF Serving's ``{"b64": "..."}``), or ``{"b64": "..."}``, a serialized
tf.train.Example (SavedModel only), parsed with the reader batch prediction uses for TFRecords
(TF Serving's columns and signatures become such rows in tfserving.py). A v2 request has one
tensor per model input, ``[rows, *shape]``. Gaps follow common.data.missing: ``null`` (v2:
``null`` in the data) in a float column is NaN, in a string column the empty string; both are
filled inside the model (the TFLite Predictor feeds the bundle's fill). A column whose type
cannot hold a gap, a missing or unknown column, a value of the wrong type and too many rows are
refused with a RequestError naming the instance, the field and what was expected.

Answers hold what a batch_predict row holds: ``class``, ``class_id``, ``score`` and, when
top_k > 1, ``top_classes`` and ``top_scores``; v1 answers also echo the key columns.
"""

import base64
import binascii
import dataclasses
import itertools
import json
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.data import missing
from tfkfp.components.common.model.predictor import BLOCKS, to_blocks
from tfkfp.components.serve.errors import RequestError

_V2_TYPES = {"float32": ("FP32", "FP64"), "int64": ("INT64", "INT32"), "string": ("BYTES",)}
_EXPECT = {"float32": "a number or null", "int64": "a whole number",
           "string": 'a string or null, or {"b64": ...}'}


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    dtype: str  # float32 | int64 | string
    shape: tuple  # per row

    def describe(self) -> str:
        return self.dtype + (str(list(self.shape)) if self.shape else "")


@dataclasses.dataclass
class Rows:
    features: Dict[str, np.ndarray]
    count: int
    keys: List[Dict[str, Any]]  # per row: the echoed key columns (v1 only)


class RowDecoder:
    """Turns request bodies into the model's input arrays, refusing what does not fit.

    Args:
        fields: the model's inputs.
        keys: columns echoed into each v1 answer (a row may omit them).
        ignored: other columns a row may carry (e.g. the schema's label); dropped.
        parse_examples: ``serialized[] -> {input: array}`` for b64 Examples, or None.
        max_instances: rows one request may carry.
        blocks: the model's Predictor.blocks: by dtype, scalar columns handed over as one
            matrix under ``BLOCKS[dtype]``, from every kind of request.
        aliases: the model's Predictor.aliases: {tensor name: column}; a row or input may
            name a column by either (unambiguous: see common.data.schema).
    """

    def __init__(self, fields: Sequence[Field], keys: Sequence[str], ignored: Sequence[str],
                 parse_examples: Callable[[List[bytes]], Dict[str, np.ndarray]] | None,
                 max_instances: int, blocks: Dict[str, Sequence[str]] | None = None,
                 aliases: Dict[str, str] | None = None):
        self.fields = {f.name: f for f in fields}
        self.aliases = dict(aliases or {})
        self.keys, self.parse_examples = list(keys), parse_examples
        self.allowed = set(self.fields) | set(keys) | set(ignored)
        self.max_instances = max_instances
        self._names = frozenset(self.fields)
        self.blocks = {dtype: list(names) for dtype, names in (blocks or {}).items()}
        # scalar columns decoded together, one numpy call per dtype (most of a wide table):
        # the blocks, and the scalar float32 columns of a model without a float block
        self._matrices = dict(self.blocks)
        if "float32" not in self._matrices:
            floats = [f.name for f in fields if f.dtype == "float32" and not f.shape]
            if floats:
                self._matrices["float32"] = floats
        together = {n for names in self._matrices.values() for n in names}
        self._others = [f for f in fields if f.name not in together]

    def v1(self, body: Any) -> Rows:
        """Rows of a v1 body ``{"instances": [...]}`` (JSON text or already decoded)."""
        if isinstance(body, (bytes, str)):  # sent without a JSON content type
            try:
                body = json.loads(body)
            except ValueError as err:
                raise RequestError(f"the body is not JSON: {err}") from None
        if not isinstance(body, dict) or "instances" not in body:
            raise RequestError('expected a JSON object {"instances": [{column: value, ...}]} '
                               '(rows) or {"inputs": {column: [value, ...]}} (columns); '
                               f"found {_kind(body)}" + _keys_of(body))
        instances = body["instances"]
        if not isinstance(instances, list) or not instances:
            raise RequestError(f'"instances": expected a non-empty list of rows; found '
                               f"{_kind(instances) if instances else 'nothing'}")
        self.check_count(len(instances), '"instances"')
        if all(isinstance(x, dict) and set(x) == {"b64"} for x in instances):
            return self._examples(instances)
        for i, row in enumerate(instances):
            if not isinstance(row, dict) or not (row.keys() >= self._names
                                                 and row.keys() <= self.allowed):
                instances[i] = row = self._by_column(row)
                self._check_row(i, row)
        keys = [{k: row[k] for k in self.keys if k in row} for row in instances]
        with np.errstate(over="ignore"):  # a number past float32 becomes inf: refused below
            features = self._v1_features(instances)
        self._check_finite(features, lambda row, name, at: _sent(instances[row][name], at))
        return Rows(features, len(instances), keys)

    def _v1_features(self, instances: List[Dict]) -> Dict:
        """The model's inputs from checked rows, a matrix per dtype where it can."""
        features = {}
        for dtype, names in self._matrices.items():
            matrix = _matrix(instances, names, dtype)
            if matrix is None:  # decoded column by column, the first bad value named
                return self.finish({name: _column([row[name] for row in instances], f)
                                    for name, f in self.fields.items()})
            if dtype in self.blocks:
                features[BLOCKS[dtype]] = matrix
            else:
                features.update(zip(names, matrix.T.copy()))  # a contiguous row per column
        features.update({f.name: _column([row[f.name] for row in instances], f)
                         for f in self._others})
        order = [BLOCKS[d] for d in self.blocks] + [n for n in self.fields if n in features]
        return {k: features[k] for k in order}

    def _check_finite(self, features: Dict, sent: Callable[[int, str, int], Any] | None
                      ) -> None:
        """Refuse ``±inf``, and numbers past float32's range (inf once cast), as
        common.data.missing says, naming the instance and column; ``sent(row, column, index)``
        gives the value as the request held it, for the message."""
        for key, values in features.items():
            hit = missing.first_infinite(values) if values.dtype == np.float32 else None
            if hit is None:
                continue
            row, at = hit
            name = self.blocks["float32"][at] if key is BLOCKS["float32"] else key
            found = sent(row, name, 0 if key is BLOCKS["float32"] else at) if sent else None
            found = found if isinstance(found, (int, float)) else values.reshape(
                len(values), -1)[row, at]
            raise RequestError(f"instance {row}, column {name!r}: "
                               f"{missing.non_finite_problem(found)}")

    def finish(self, features: Dict[str, np.ndarray]) -> Dict:
        """Features by column as the model takes them: its blocks stacked, if any."""
        return to_blocks(features, self.blocks, cast=True) if self.blocks else features

    def check_count(self, count: int, where: str) -> None:
        if count > self.max_instances:
            raise RequestError(f"{where}: {count} rows; at most {self.max_instances} per "
                               "request (max_instances)")

    def _by_column(self, row: Any) -> Any:
        """A row whose columns are named by their tensor names, named by the columns."""
        if not self.aliases or not isinstance(row, dict) or not row.keys() & self.aliases:
            return row
        return {self.aliases.get(k, k) if k not in self.allowed else k: v
                for k, v in row.items()}

    def _check_row(self, index: int, row: Any) -> None:
        if not isinstance(row, dict):
            raise RequestError(f"instance {index}: expected an object {{column: value}}; "
                               f"found {_kind(row)}")
        wrong = _mismatch([n for n in self.fields if n not in row],
                          sorted(set(row) - self.allowed), "column")
        if wrong:
            wanted = ", ".join(f"{f.name} ({f.describe()})" for f in self.fields.values())
            raise RequestError(f"instance {index}: {wrong}; the model takes {wanted} (null "
                               "for a gap)")

    def _examples(self, instances: List[Dict]) -> Rows:
        if self.parse_examples is None:
            raise RequestError('instances of {"b64": ...} (serialized tf.train.Example) need '
                               "a SavedModel; this model takes rows {column: value}")
        records = []
        for i, row in enumerate(instances):
            try:
                records.append(base64.b64decode(row["b64"], validate=True))
            except (binascii.Error, TypeError, ValueError) as err:
                raise RequestError(f'instance {i}: "b64" is not base64 ({err})') from None
        try:
            features = self.parse_examples(records)
        except Exception as err:  # noqa: BLE001 - any parse failure is the request's fault
            from tfkfp.components.serve.refusals import example_refusal

            raise example_refusal(records, self.parse_examples, err) from None
        self._check_finite(features, None)  # a FloatList holds float32: inf as sent
        return Rows(self.finish(features), len(records), [{} for _ in records])

    def v2(self, inputs: Sequence[Any]) -> Rows:
        """Rows of v2 InferInputs: one tensor per model input, all with the same rows."""
        given = {self.aliases.get(i.name, i.name) if i.name not in self.fields else i.name: i
                 for i in inputs}
        wrong = _mismatch([n for n in self.fields if n not in given],
                          sorted(set(given) - set(self.fields)), "input")
        if wrong:
            wanted = ", ".join(f"{f.name} ({_V2_TYPES[f.dtype][0]} [-1{_dims(f)}])"
                               for f in self.fields.values())
            raise RequestError(f"inputs: {wrong}; the model takes {wanted}")
        with np.errstate(over="ignore"):  # a number past float32 becomes inf: refused below
            features = {name: _tensor(given[name], f) for name, f in self.fields.items()}
        counts = {len(v) for v in features.values()}
        if len(counts) != 1:
            raise RequestError(f"inputs: every input needs the same rows; found "
                               f"{ {n: len(v) for n, v in features.items()} }")
        count = counts.pop()
        self.check_count(count, "inputs")
        self._check_finite(features, lambda row, name, at: _sent(
            given[name].data, row * int(np.prod(self.fields[name].shape)) + at))
        return Rows(self.finish(features), count, [{} for _ in range(count)])


_FITS = {"float32": frozenset({float, int, type(None)}), "int64": frozenset({int})}


def _matrix(instances: List[Dict], names: List[str], dtype: str) -> np.ndarray | None:
    """Scalar columns of one dtype of checked rows as one ``[rows, columns]`` matrix,
    converted in one numpy call (a float gap, ``null``, is NaN as in ``_column``), or None
    when some value does not fit (``_column`` then names it)."""
    values = [list(map(row.__getitem__, names)) for row in instances]
    if not set(map(type, itertools.chain.from_iterable(values))) <= _FITS[dtype]:
        return None
    try:
        return np.array(values, dtype=dtype)
    except (OverflowError, TypeError, ValueError):
        return None


def _column(values: List[Any], field: Field) -> np.ndarray:
    """One column's values as the model's input array (gaps as common.data.missing stores them)."""
    if field.shape:
        return np.stack([_shaped(i, v, field) for i, v in enumerate(values)])
    gap = missing.gap_value(field.dtype) if missing.can_hold_gaps(field.dtype) else None
    out = []
    for i, value in enumerate(values):
        if value is None and gap is not None:
            value = gap
        elif not _fits(value, field.dtype):
            raise _wrong(i, field, value)
        out.append(_bytes(i, field, value) if field.dtype == "string" else value)
    return np.asarray(out, dtype=object if field.dtype == "string" else field.dtype)


def _fits(value: Any, dtype: str) -> bool:
    if isinstance(value, bool):
        return False
    if dtype == "float32":
        return isinstance(value, (int, float))
    if dtype == "int64":
        return isinstance(value, int) and -2**63 <= value < 2**63
    return isinstance(value, str) or (isinstance(value, dict) and value.keys() == {"b64"})


def _bytes(index: int, field: Field, value: Any) -> bytes:
    """A string value as UTF-8 bytes; TF Serving's ``{"b64": ...}`` as the bytes it holds."""
    if isinstance(value, str):
        return value.encode()
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, TypeError, ValueError) as err:
        raise RequestError(f'instance {index}, column {field.name!r}: "b64" is not base64 '
                           f"({err})") from None


def _shaped(index: int, value: Any, field: Field) -> np.ndarray:
    flat = _flatten(value)
    size = int(np.prod(field.shape))
    if flat is None or len(flat) != size or not all(_fits(v, field.dtype) for v in flat):
        raise _wrong(index, field, value, f"a list of {size} values ({_EXPECT[field.dtype]},"
                     " no gaps)")
    if field.dtype == "string":
        flat = [_bytes(index, field, v) for v in flat]
    dtype = object if field.dtype == "string" else field.dtype
    return np.asarray(flat, dtype=dtype).reshape(field.shape)


def _sent(value: Any, index: int) -> Any:
    """The ``index``-th number of a value as sent (a number or nested lists), or None."""
    flat = _flatten(value) if isinstance(value, list) else [value]
    return flat[index] if flat is not None and index < len(flat) else None


def _flatten(value: Any) -> List[Any] | None:
    if not isinstance(value, list):
        return None
    if value and isinstance(value[0], list):
        parts = [_flatten(v) for v in value]
        return None if any(p is None for p in parts) else [x for p in parts for x in p]
    return value


def _wrong(index: int, field: Field, value: Any, expected: str = "") -> RequestError:
    found = repr(value)
    found = found if len(found) <= 60 else found[:57] + "..."
    return RequestError(f"instance {index}, column {field.name!r}: expected "
                        f"{field.describe()} ({expected or _EXPECT[field.dtype]}); found "
                        f"{found}")


def _tensor(tensor: Any, field: Field) -> np.ndarray:
    allowed = _V2_TYPES[field.dtype]
    if tensor.datatype not in allowed:
        raise RequestError(f"input {field.name!r}: datatype {tensor.datatype}; expected "
                           f"{' or '.join(allowed)}")
    shape = list(tensor.shape)
    if len(shape) != 1 + len(field.shape) or tuple(shape[1:]) != tuple(field.shape):
        raise RequestError(f"input {field.name!r}: shape {shape}; expected [rows{_dims(field)}]")
    try:
        if field.dtype == "string":
            data = np.asarray(tensor.data if tensor.data is not None else [], dtype=object)
            flat = [b"" if v is None else v if isinstance(v, bytes) else str(v).encode()
                    for v in data.reshape(-1)]
            return np.asarray(flat, dtype=object).reshape(shape)
        return tensor.as_numpy().astype(field.dtype, copy=False).reshape(shape)
    except (TypeError, ValueError) as err:
        gaps = "" if field.dtype == "float32" else " (an int64 input cannot hold a gap)"
        raise RequestError(f"input {field.name!r}: data does not fit {tensor.datatype} "
                           f"shape {shape}{gaps}: {err}") from None


def _mismatch(absent: List[str], unknown: List[str], what: str) -> str:
    parts = [f"missing {what} {absent}"] if absent else []
    parts += [f"unknown {what} {unknown}"] if unknown else []
    return ", ".join(parts)


def _dims(field: Field) -> str:
    return "".join(f", {d}" for d in field.shape)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bytes: "bytes"}.get(
        type(value), type(value).__name__)


def _keys_of(value: Any) -> str:
    return f" with keys {sorted(value)[:10]}" if isinstance(value, dict) else ""
