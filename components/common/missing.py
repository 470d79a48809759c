"""Missing values: how a gap is stored and fed, the same in sharding, training and prediction.

A gap in a ``float32`` column is NaN; the model replaces it with the column's mean (from the
statistics sampled at training time) inside its graph, so a row with gaps predicts anywhere
the model runs. A gap in a ``string`` column is the empty string, which the model's lookup
maps to its out-of-vocabulary index. ``int64`` columns cannot hold a gap: a column with
blanks is read as ``float32`` (as pandas does), or refused naming the column_types to set.
"""

import numpy as np

POLICIES = ("impute", "error")  # shard_tfrecords' ``missing`` parameter
_FILL = {"float32": float("nan"), "string": ""}


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
