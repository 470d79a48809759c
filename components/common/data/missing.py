"""Missing values: how a gap is stored and fed, the same in sharding, training and prediction.

A gap in a ``float32`` column is NaN; the model replaces it with the column's mean (from the
statistics sampled at training time) inside its graph, so a row with gaps predicts anywhere
the model runs. A gap in a ``string`` column is the empty string, which the model's lookup
maps to its out-of-vocabulary index. ``int64`` columns cannot hold a gap: a column with
blanks is read as ``float32`` (as pandas does), or refused naming the column_types to set.

``±inf``, and any number too large for float32 (a cast makes it ``±inf``), is not a gap but
a bad value: refused wherever data enters (sharding, serving, batch prediction) in
``non_finite_problem``'s words, since it would reach the model as ``inf``.
"""

from typing import Any, Dict, Tuple

import numpy as np

_FILL = {"float32": float("nan"), "string": ""}
FLOAT32_MAX = float(np.finfo(np.float32).max)


def can_hold_gaps(dtype: str) -> bool:
    return dtype in _FILL


def gap_value(dtype: str):
    """How a gap is stored in a ``dtype`` column: NaN (float32) or the empty string."""
    return _FILL[dtype]


def fill_nulls(array, dtype: str):
    """An arrow array of scalars with its nulls replaced by the gap value of ``dtype``
    (float32 or string)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not array.null_count:
        return array
    return pc.fill_null(array, pa.scalar(_FILL[dtype], type=array.type))


def gap_rows(values: np.ndarray, dtype: str) -> np.ndarray:
    """A boolean per row: whether any of its values is a gap."""
    flat = values.reshape(len(values), -1)
    if dtype == "float32":
        return np.isnan(flat).any(axis=1)
    if dtype == "string":
        return ((flat == "") | (flat == b"")).any(axis=1)
    return np.zeros(len(values), dtype=bool)


def first_infinite(values: np.ndarray) -> Tuple[int, int] | None:
    """(row, position within the row) of the first ``±inf`` in a float32 array of rows, or
    None: one vectorised pass, as every float input is checked on the fast path. Checked
    after the cast to float32, so a number past float32's range (now ``±inf``) is caught
    too; NaN is a gap and passes."""
    flat = values.reshape(len(values), -1)
    infinite = np.isinf(flat)
    if not infinite.any():
        return None
    row, position = divmod(int(np.argmax(infinite)), infinite.shape[1])  # first in row order
    return row, position


def non_finite_problem(found: Any) -> str:
    """The one wording for ``±inf`` or a number past float32's range, wherever refused."""
    return (f"found {found}, expected a finite float32 within ±{FLOAT32_MAX:.8g} (a missing "
            "value is a gap, not inf)")


def fills_from_signature(signature: Dict[str, Any]) -> Dict[str, np.ndarray]:
    """The fills a TFLite bundle's signature.json gives (common.tflite.feeding.describe
    writes them), for a runner that reads a bundle."""
    fills = {}
    for name, entry in signature.get("inputs", {}).items():
        fill = (entry.get("missing") or {}).get("fill")
        if fill is not None:
            fills[name] = np.asarray(fill, np.float32)
    return fills


def fill_gaps(values: np.ndarray, fill: np.ndarray | None) -> np.ndarray:
    """values with each NaN replaced by the fill (values unchanged without a fill): how a gap
    is fed where the model's own imputation cannot see a NaN (a quantized input)."""
    if fill is None or values.dtype.kind != "f":
        return values
    gaps = np.isnan(values)
    if not gaps.any():
        return values
    fill = np.asarray(fill, values.dtype)
    row = values.shape[1:]
    if fill.size == 1:
        fill = fill.reshape(())
    elif fill.size == int(np.prod(row)):
        fill = fill.reshape(row)
    else:
        raise ValueError(f"a fill of {fill.size} values does not fit inputs of shape "
                         f"{list(row)} per example")
    return np.where(gaps, fill, values)
