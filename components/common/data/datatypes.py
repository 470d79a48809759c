"""The suite's column dtypes (float32, int64, string: what schema.json says) and their names
elsewhere, one table: the Open Inference Protocol's datatypes (v2), TensorFlow's DataType enum
names (as TF Serving's metadata writes them) and NumPy's dtypes.

Each entry lists, first, the name the suite sends and answers, then the others it reads as the
same column dtype (a client's FP64 is taken as float32). Serving (``serve``), the endpoint
callers (``common.endpoint``) and the TFLite runtime (``common.model``) all read it, so adding
a dtype is one entry here.
"""

import dataclasses
from typing import Dict, Tuple

import numpy as np


@dataclasses.dataclass(frozen=True)
class DataType:
    name: str  # the column dtype in schema.json
    v2: Tuple[str, ...]  # Open Inference Protocol datatypes read as it; the first is sent
    tf: Tuple[str, ...]  # TF DataType enum names read as it; the first is written
    numpy: Tuple[np.dtype, ...]  # NumPy dtypes read as it (a TFLite model's tensors)


DATATYPES: Dict[str, DataType] = {d.name: d for d in (
    DataType("float32", ("FP32", "FP64"), ("DT_FLOAT", "DT_DOUBLE"), (np.dtype(np.float32),)),
    DataType("int64", ("INT64", "INT32"), ("DT_INT64", "DT_INT32"), (np.dtype(np.int64),)),
    DataType("string", ("BYTES",), ("DT_STRING",), (np.dtype(np.bytes_), np.dtype(np.object_))),
)}


def v2_name(dtype: str) -> str:
    """The Open Inference Protocol datatype a column of ``dtype`` is sent and answered as."""
    return DATATYPES[dtype].v2[0]


def v2_accepted(dtype: str) -> Tuple[str, ...]:
    """The Open Inference Protocol datatypes taken for a column of ``dtype``."""
    return DATATYPES[dtype].v2


def from_v2(datatype: str) -> str:
    """The column dtype of an Open Inference Protocol datatype; KeyError when none."""
    return {name: d.name for d in DATATYPES.values() for name in d.v2}[datatype]


def from_tf(enum_name: str) -> str:
    """The column dtype of a TF DataType enum name (``DT_FLOAT``); KeyError when none."""
    return {name: d.name for d in DATATYPES.values() for name in d.tf}[enum_name]


def tf_of_v2(datatype: str) -> str:
    """The TF DataType enum name written for a datatype the suite answers (``FP32`` ->
    ``DT_FLOAT``); KeyError for any other."""
    return {d.v2[0]: d.tf[0] for d in DATATYPES.values()}[datatype]


def from_numpy(dtype: np.dtype) -> str | None:
    """The column dtype of a NumPy dtype, or None when none holds it."""
    return {t: d.name for d in DATATYPES.values() for t in d.numpy}.get(np.dtype(dtype))
