"""What a loaded model is to its callers (common.model.predictor loads one): the
``Predictor``, the specs of its inputs, the matrices it takes blocks of scalar columns as
(``BLOCKS``), and ``ModelInputError`` for a model or data that do not fit."""

import dataclasses
from typing import Callable, Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data.schema import Schema


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


def column_of(schema: Schema | None, tensor: str) -> str:
    """The column a model input takes: the schema's column of that tensor name, else the
    input's own name (a model made elsewhere)."""
    column = schema.column_of_tensor(tensor) if schema is not None else None
    return column.name if column is not None else tensor


def aliases_of(tensors: Dict[str, str]) -> Dict[str, str]:
    """``Predictor.aliases`` from {column: the model's input name}: where the two differ."""
    return {t: c for c, t in tensors.items() if t != c}
