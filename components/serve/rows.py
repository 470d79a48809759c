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
refused with a RequestError naming the instance, the field and what was expected. The values of
one column (a Field) become its array in ``fields``.

Answers hold what a batch_predict row holds: ``class``, ``class_id``, ``score`` and, when
top_k > 1, ``top_classes`` and ``top_scores``; v1 answers also echo the key columns.
"""

import base64
import binascii
import dataclasses
import json
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.data import datatypes, missing
from tfkfp.components.common.model.predictor import BLOCKS, to_blocks
from tfkfp.components.serve.errors import RequestError
from tfkfp.components.serve.fields import (
    Field,
    column_array,
    dims_text,
    scalar_matrix,
    sent_value,
    tensor_array,
)

__all__ = ["Field", "RequestError", "RowDecoder", "Rows"]


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
        self._check_finite(features, lambda row, name, at: sent_value(instances[row][name], at))
        return Rows(features, len(instances), keys)

    def _v1_features(self, instances: List[Dict]) -> Dict:
        """The model's inputs from checked rows, a matrix per dtype where it can."""
        features = {}
        for dtype, names in self._matrices.items():
            block = scalar_matrix(instances, names, dtype)
            if block is None:  # decoded column by column, the first bad value named
                return self.finish({name: column_array([row[name] for row in instances], f)
                                    for name, f in self.fields.items()})
            if dtype in self.blocks:
                features[BLOCKS[dtype]] = block
            else:
                features.update(zip(names, block.T.copy()))  # a contiguous row per column
        features.update({f.name: column_array([row[f.name] for row in instances], f)
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
            wanted = ", ".join(f"{f.name} ({datatypes.v2_name(f.dtype)} [-1{dims_text(f)}])"
                               for f in self.fields.values())
            raise RequestError(f"inputs: {wrong}; the model takes {wanted}")
        with np.errstate(over="ignore"):  # a number past float32 becomes inf: refused below
            features = {name: tensor_array(given[name], f) for name, f in self.fields.items()}
        counts = {len(v) for v in features.values()}
        if len(counts) != 1:
            raise RequestError(f"inputs: every input needs the same rows; found "
                               f"{ {n: len(v) for n, v in features.items()} }")
        count = counts.pop()
        self.check_count(count, "inputs")
        self._check_finite(features, lambda row, name, at: sent_value(
            given[name].data, row * int(np.prod(self.fields[name].shape)) + at))
        return Rows(self.finish(features), count, [{} for _ in range(count)])


def _mismatch(absent: List[str], unknown: List[str], what: str) -> str:
    parts = [f"missing {what} {absent}"] if absent else []
    parts += [f"unknown {what} {unknown}"] if unknown else []
    return ", ".join(parts)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bytes: "bytes"}.get(
        type(value), type(value).__name__)


def _keys_of(value: Any) -> str:
    return f" with keys {sorted(value)[:10]}" if isinstance(value, dict) else ""
