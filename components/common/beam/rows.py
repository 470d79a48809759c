"""Rows as users' Beam pipelines hold them (a dict per row, plain values, e.g. parsed JSON)
encoded one by one into the arrays the suite's models take, before RunInference batches
them: a bad row becomes its own error, never a failed batch.

The rules are the suite's everywhere data enters: columns by name (extra fields ignored), a
gap (None, NaN, or "" in a number column) is NaN in a float32 column and "" in a string
column and is filled inside the model, an int64 column cannot hold a gap, and ``±inf`` or a
number past float32's range is refused in ``common.data.missing``'s words.
"""

import base64
import math
from typing import Any, Dict, List, Mapping, Sequence

import numpy as np

from tfkfp.components.common.data import missing
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.model.bundle import SAVEDMODEL, TFLITE, Bundle, kind_of
from tfkfp.components.common.model.predictor import ModelInputError


class RowError(ValueError):
    """A row that cannot be fed to the model; the message names the column and the rule."""


def model_schema(model_uri: str) -> Schema:
    """The columns a tfkfp SavedModel or TFLite bundle was trained on, read from its files
    without loading TensorFlow (an encoding step needs no model)."""
    kind = kind_of(model_uri)
    if kind == SAVEDMODEL:
        return savedmodel.load_schema(model_uri)
    bundle = Bundle(model_uri) if kind == TFLITE else Bundle.of_model_file(model_uri)
    schema = bundle.schema()
    if schema is None:
        raise ModelInputError(f"model {model_uri} carries no schema.json: rows cannot be "
                              "matched to its inputs by column name")
    return schema


class RowEncoder:
    """Encodes a row (column name -> value) into one array per model input column."""

    def __init__(self, columns: Sequence[Column]):
        self.columns = list(columns)
        self.names = [c.name for c in self.columns]

    def encode(self, row: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        if not isinstance(row, Mapping):
            raise RowError(f"a row is an object of column -> value, not a "
                           f"{type(row).__name__}; the model needs {self.names}")
        absent = [n for n in self.names if n not in row]
        if absent:
            raise RowError(f"missing column(s) {absent}; the model needs {self.names}")
        return {c.name: _encode_value(c, row[c.name]) for c in self.columns}


def _encode_value(col: Column, value: Any) -> np.ndarray:
    if col.shape:
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise RowError(f"column {col.name!r}: expected a list of {_width(col)} values, "
                           f"found {_short(value)}")
        flat = np.asarray(value, dtype=object).reshape(-1)
        if flat.size != _width(col):
            raise RowError(f"column {col.name!r}: found a list of {flat.size} values, "
                           f"expected {_width(col)}")
        values = [_scalar(col, v, gaps=False) for v in flat]
        return np.asarray(values, dtype=_numpy_dtype(col)).reshape(col.shape)
    return np.asarray(_scalar(col, value, gaps=True), dtype=_numpy_dtype(col))


def _scalar(col: Column, value: Any, gaps: bool) -> Any:
    if _is_gap(value):
        if not gaps or not missing.can_hold_gaps(col.dtype):
            raise RowError(f"column {col.name!r}: missing value; {_kind(col)} cannot hold a "
                           "gap")
        return missing.gap_value(col.dtype).encode() if col.dtype == "string" else math.nan
    if col.dtype == "string":
        return _text(col, value)
    if isinstance(value, (bool, str, bytes, dict, list)) and not _numeric_text(value):
        raise RowError(f"column {col.name!r}: found {_short(value)}, expected {_kind(col)}")
    number = float(value)
    if col.dtype == "int64":
        if not number.is_integer():
            raise RowError(f"column {col.name!r}: found {_short(value)}, expected a whole "
                           "number (int64)")
        return int(number)
    if math.isinf(number) or abs(number) > missing.FLOAT32_MAX:
        raise RowError(f"column {col.name!r}: {missing.non_finite_problem(value)}")
    return number


def _text(col: Column, value: Any) -> bytes:
    if isinstance(value, dict) and set(value) == {"b64"}:  # encoded bytes, as JSON carries them
        try:
            return base64.b64decode(value["b64"], validate=True)
        except ValueError as err:
            raise RowError(f"column {col.name!r}: b64 value does not decode: {err}") from None
    if isinstance(value, bytes):
        return value
    if isinstance(value, (dict, list)):
        raise RowError(f"column {col.name!r}: found {_short(value)}, expected text")
    return str(value).encode("utf-8")


def _is_gap(value: Any) -> bool:
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    return isinstance(value, float) and math.isnan(value)


def _numeric_text(value: Any) -> bool:
    """A number written as text ("3.5", as CSV cells are read) is a number."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _numpy_dtype(col: Column):
    return object if col.dtype == "string" else np.dtype(col.dtype)


def _width(col: Column) -> int:
    return int(np.prod(col.shape))


def _kind(col: Column) -> str:
    return col.dtype + (str(list(col.shape)) if col.shape else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


BLOCK_KEY = "tfkfp.block:"  # a row's scalar columns of one dtype as one vector: key + dtype


def block_key(dtype: str) -> str:
    """The key under which a row carries a model's block of scalar ``dtype`` columns as one
    vector (``Predictor.blocks`` order): one array a row instead of one per column, which
    Beam moves and sizes far faster for a wide table."""
    return BLOCK_KEY + dtype


def stack_rows(rows: List[Mapping[str, np.ndarray]], columns: Sequence[Column]
               ) -> Dict[Any, np.ndarray]:
    """Encoded rows as one array per column, rows first, and each block vector stacked into
    its ``[rows, n]`` matrix under ``BLOCKS[dtype]``: what a Predictor takes."""
    from tfkfp.components.common.model.predictor import BLOCKS

    present = set(rows[0])
    stacked: Dict[Any, np.ndarray] = {
        BLOCKS[key[len(BLOCK_KEY):]]: np.stack([row[key] for row in rows])
        for key in present if key.startswith(BLOCK_KEY)}
    for col in columns:
        if col.name not in present:
            continue
        values = [row[col.name] for row in rows]
        if col.dtype == "string" and not col.shape:
            array = np.empty(len(values), dtype=object)
            array[:] = [v.item() if isinstance(v, np.ndarray) else v for v in values]
        else:
            array = np.stack(values).astype(_numpy_dtype(col), copy=False)
        stacked[col.name] = array
    return stacked
