"""Packed inputs: a tabular model's numeric columns as one input tensor per dtype block.

In the ``packed`` layout (export_tflite's and freeze_quantize's default) the converted model
takes its scalar float columns as one float32 ``[batch, n_float]`` input, ``floats``, and its
scalar whole-number columns as one int32 ``[batch, n_int]`` input, ``ints`` (LiteRT's
CompiledModel takes int32 where it takes no int64), each in the order of the model's schema,
which the bundle records (``columns`` of the input in signature.json and in the model's
``tfkfp.app.json``). Every other input (strings, images, vectors) stays an input of its own,
named as in the signature. In the ``columns`` layout every column is its own input, as the
SavedModel's signature takes them.

This module plans the blocks and packs NumPy columns into them (for the gate, calibration
and every runner); common.tflite.vectorise builds the graph that takes them.
"""

import dataclasses
from typing import Dict, Iterable, List, Tuple

import numpy as np

from tfkfp.components.common.tflite.options import COLUMNS, QuantizeInputError

FLOAT_BLOCK, INT_BLOCK = "floats", "ints"
_INT32 = np.iinfo(np.int32)


@dataclasses.dataclass(frozen=True)
class Block:
    """One packed input: its name, dtype and the signature inputs it holds, in order."""

    name: str
    dtype: str  # float32 | int32
    inputs: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Packing:
    """The blocks of a converted model (none: every input is its own, the columns layout)."""

    blocks: Tuple[Block, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.blocks)

    @property
    def packed(self) -> Dict[str, Tuple[Block, int]]:
        """{signature input: (its block, its position there)}."""
        return {name: (b, i) for b in self.blocks for i, name in enumerate(b.inputs)}

    def feed(self, features: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Signature inputs by name -> the converted model's inputs: each block's columns
        stacked in order, the others as they are."""
        if not self.blocks:
            return features
        out = {n: v for n, v in features.items() if n not in self.packed}
        for block in self.blocks:
            out[block.name] = _stack(block, [features[n] for n in block.inputs])
        return out

    def fills(self, fills: Dict[str, np.ndarray] | None) -> Dict[str, np.ndarray]:
        """Gap fills by signature input -> by model input: a block's is one per column,
        NaN for a column the model does not impute (a gap stays a gap there)."""
        fills = dict(fills or {})
        for block in self.blocks:
            values = [fills.pop(n, None) for n in block.inputs]
            if any(v is not None for v in values):
                fills[block.name] = np.array(
                    [np.nan if v is None else float(np.asarray(v).reshape(-1)[0])
                     for v in values], np.float32)
        return fills


def _stack(block: Block, columns: List[np.ndarray]) -> np.ndarray:
    matrix = np.stack([np.asarray(c).reshape(len(c)) for c in columns], axis=1)
    if block.dtype == "int32" and matrix.size:
        low, high = matrix.min(), matrix.max()
        if low < _INT32.min or high > _INT32.max:
            at = int(np.argmax((matrix < _INT32.min) | (matrix > _INT32.max)))
            row, column = divmod(at, matrix.shape[1])
            raise QuantizeInputError(
                f"row {row}, column {block.inputs[column]!r}: {matrix[row, column]} does not "
                f"fit the int32 input {block.name!r} of the packed layout (int32 holds "
                f"{_INT32.min} to {_INT32.max}); convert with input_layout 'columns' to feed "
                "it as int64")
    return np.ascontiguousarray(matrix.astype(block.dtype, copy=False))


def plan(specs: Dict, order: Iterable[str], layout: str) -> Packing:
    """The blocks of a signature (``specs``: input -> tf.TensorSpec) in a layout: its scalar
    float32 inputs in one, its scalar int32/int64 inputs in another, each in ``order``
    (signature inputs in the schema's column order)."""
    if layout == COLUMNS:
        return Packing()
    scalar = [n for n in order if specs[n].shape.rank == 1]
    floats = tuple(n for n in scalar if specs[n].dtype.name == "float32")
    ints = tuple(n for n in scalar if specs[n].dtype.name in ("int32", "int64"))
    taken = set(specs)
    blocks = [Block(_free(name, taken), dtype, names) for name, dtype, names in
              ((FLOAT_BLOCK, "float32", floats), (INT_BLOCK, "int32", ints)) if names]
    return Packing(tuple(blocks))


def _free(name: str, taken) -> str:
    """The block's name, or it marked as packed where an input of its own has that name."""
    return name if name not in taken else f"{name}__packed"


def ordered_inputs(columns: Dict[str, str], schema_order: List[str]) -> List[str]:
    """Signature inputs in the schema's order of the columns feeding them (by name after)."""
    position = {c: i for i, c in enumerate(schema_order)}
    return sorted(columns, key=lambda n: (position.get(columns[n], len(position)), n))


def describe(packing: Packing) -> Dict[str, Dict]:
    """signature.json's ``blocks``: each packed input's dtype and signature inputs."""
    return {b.name: {"dtype": b.dtype, "inputs": list(b.inputs)} for b in packing.blocks}


def from_description(blocks: Dict[str, Dict] | None) -> Packing:
    """A Packing back from signature.json's or quantization.json's ``blocks``."""
    return Packing(tuple(Block(name, body["dtype"], tuple(body["inputs"]))
                         for name, body in (blocks or {}).items()))


def pack_examples(packing: Packing, examples):
    """common.tflite.inputs.Examples as the converted model takes them."""
    return dataclasses.replace(examples, features=packing.feed(examples.features))


def for_binding(fn, binding, schema, layout: str) -> Packing:
    """The blocks of a bound signature (common.tflite.binding) in a layout; a signature
    that fixes its batch size keeps its columns (its inputs are not a table's)."""
    if binding.batch is not None:
        return Packing()
    specs = dict(fn.structured_input_signature[1])
    order = ordered_inputs(binding.columns, [c.name for c in schema.features])
    return plan(specs, order, layout)
