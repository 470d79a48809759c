"""A request's values: the columns a model takes (``Field``) and how the values sent for one
become its input array, a value, a column of v1 rows, a matrix of scalar columns or a v2
tensor, refused with a RequestError naming the instance, the column and what was expected.
Gaps follow common.data.missing; datatypes follow common.data.datatypes. ``rows`` decodes
whole request bodies with these.
"""

import base64
import binascii
import dataclasses
import itertools
from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.data import datatypes, missing
from tfkfp.components.serve.errors import RequestError

_EXPECT = {"float32": "a number or null", "int64": "a whole number",
           "string": 'a string or null, or {"b64": ...}'}


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    dtype: str  # float32 | int64 | string
    shape: tuple  # per row

    def describe(self) -> str:
        return self.dtype + (str(list(self.shape)) if self.shape else "")


_FITS = {"float32": frozenset({float, int, type(None)}), "int64": frozenset({int})}


def scalar_matrix(instances: List[Dict], names: List[str], dtype: str) -> np.ndarray | None:
    """Scalar columns of one dtype of checked rows as one ``[rows, columns]`` matrix,
    converted in one numpy call (a float gap, ``null``, is NaN as in ``column_array``), or None
    when some value does not fit (``column_array`` then names it)."""
    values = [list(map(row.__getitem__, names)) for row in instances]
    if not set(map(type, itertools.chain.from_iterable(values))) <= _FITS[dtype]:
        return None
    try:
        return np.array(values, dtype=dtype)
    except (OverflowError, TypeError, ValueError):
        return None


def column_array(values: List[Any], field: Field) -> np.ndarray:
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


def sent_value(value: Any, index: int) -> Any:
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


def tensor_array(tensor: Any, field: Field) -> np.ndarray:
    allowed = datatypes.v2_accepted(field.dtype)
    if tensor.datatype not in allowed:
        raise RequestError(f"input {field.name!r}: datatype {tensor.datatype}; expected "
                           f"{' or '.join(allowed)}")
    shape = list(tensor.shape)
    if len(shape) != 1 + len(field.shape) or tuple(shape[1:]) != tuple(field.shape):
        raise RequestError(f"input {field.name!r}: shape {shape}; expected "
                           f"[rows{dims_text(field)}]")
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


def dims_text(field: Field) -> str:
    return "".join(f", {d}" for d in field.shape)
