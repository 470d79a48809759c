"""Per-column preprocessing chains of a frozen tabular graph: recognised column by column,
and run once on a block's columns (for common.tflite.vectorise).

A chain starts at a packed column and ends at an input of a concatenation: elementwise ops
whose other operand is a one-value constant (``Sub``, ``Mul``, ``RealDiv``, ``AddV2``,
``Maximum``...), unary elementwise ops and casts, the gap fill
``Select(NotEqual(x, x), fill, x)`` and exactly one reshape adding the last axis. Chains
alike op for op run once on the block's columns, each constant the vector of the columns'
constants: the same arithmetic, element by element.
"""

import dataclasses
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.tflite.packing import Block
from tfkfp.components.common.tflite.rewrite import add_const, const_value, tensor_name

PREFIX = "tfkfp_packed"  # names of the nodes added for the packed layout
_BINARY = ("Sub", "Mul", "RealDiv", "Add", "AddV2", "Maximum", "Minimum")
_UNARY = ("Cast", "Identity", "Abs", "Neg", "Exp", "Log", "Log1p", "Sqrt", "Rsqrt", "Square",
          "Tanh", "Sigmoid", "Relu", "Floor")
_IMPUTE, _WIDEN = "impute", "widen"


@dataclasses.dataclass(frozen=True)
class Step:
    op: str
    attrs: Tuple  # (key, serialized AttrValue) pairs: equal steps have equal attrs
    const: np.ndarray | None = None  # the one-value operand of a binary op or the fill
    const_first: bool = False  # Sub(c, x) rather than Sub(x, c)


@dataclasses.dataclass(frozen=True)
class Chain:
    column: str  # the signature input it starts from
    steps: Tuple[Step, ...]  # from the column outward

    def shape(self) -> Tuple:
        return tuple((s.op, s.attrs, s.const is not None, s.const_first) for s in self.steps)


def strided_slice(graph_def, name: str, source: str, start: int, stop: int, dtype: int,
                   shrink: bool = False) -> str:
    """source[:, start:stop] (source[:, start] with ``shrink``)."""
    import tensorflow as tf

    begin = add_const(graph_def, f"{name}/begin", np.array([0, start], np.int32), tf.int32)
    end = add_const(graph_def, f"{name}/end", np.array([0, stop], np.int32), tf.int32)
    strides = add_const(graph_def, f"{name}/strides", np.array([1, 1], np.int32), tf.int32)
    node = graph_def.node.add(name=name, op="StridedSlice", input=[source, begin, end, strides])
    node.attr["T"].type = dtype
    node.attr["Index"].type = tf.int32.as_datatype_enum
    node.attr["begin_mask"].i = 1
    node.attr["end_mask"].i = 1
    node.attr["shrink_axis_mask"].i = 2 if shrink else 0
    return name


def chain_of(nodes, tensor: str, columns: Dict[str, str]) -> Chain | None:
    """The chain from a packed column to ``tensor``, if it is one this module vectorises:
    elementwise steps and exactly one reshape adding the last axis."""
    steps = []
    for _ in range(64):
        if ":" in tensor and not tensor.endswith(":0"):
            return None
        node = nodes.get(tensor_name(tensor))
        if node is None:
            return None
        if node.name in columns:
            widened = [s for s in steps if s.op == _WIDEN]
            return Chain(columns[node.name], tuple(reversed(steps))) \
                if len(widened) == 1 else None
        step, tensor = _step(nodes, node)
        if step is None:
            return None
        steps.append(step)
    return None


def _step(nodes, node) -> Tuple[Step | None, str]:
    """(the step a node is, the tensor it reads), or (None, "")."""
    attrs = tuple(sorted((k, v.SerializeToString()) for k, v in node.attr.items()))
    if node.op in _UNARY:
        return Step(node.op, attrs), node.input[0]
    if node.op in _BINARY:
        for at in (1, 0):
            value = const_value(nodes, node.input[at])
            if value is not None and value.size == 1:
                return Step(node.op, attrs, value.reshape(()), at == 0), node.input[1 - at]
        return None, ""
    if node.op in ("Select", "SelectV2"):
        cond = nodes.get(tensor_name(node.input[0]))
        fill = const_value(nodes, node.input[1])
        x = node.input[2]
        if cond is not None and cond.op == "NotEqual" and fill is not None and \
                fill.size == 1 and list(cond.input[:2]) == [x, x]:
            return Step(_IMPUTE, attrs, fill.reshape(())), x
        return None, ""
    if _widens(nodes, node):
        return Step(_WIDEN, ()), node.input[0]
    return None, ""


def _widens(nodes, node) -> bool:
    """An ExpandDims on the last axis, or a Reshape to [-1, 1]."""
    if node.op == "ExpandDims":
        axis = const_value(nodes, node.input[1])
        return axis is not None and int(axis) in (-1, 1)
    if node.op == "Reshape":
        shape = const_value(nodes, node.input[1])
        return shape is not None and shape.tolist() == [-1, 1]
    return False


def vectorised(graph_def, chains: List[Chain], position, name: str,
                dtypes: Dict[str, int]) -> str:
    """The chains run once on their columns of the block (cast to the columns' dtype): the
    tensor replacing them."""
    import tensorflow as tf

    block = position[chains[0].column][0]
    indices = [position[c.column][1] for c in chains]
    block_dtype = tf.as_dtype(block.dtype).as_datatype_enum
    x = _columns(graph_def, block, indices, name, block_dtype)
    dtype = dtypes[chains[0].column]
    if dtype != block_dtype:
        x = add_node(graph_def, f"{name}/cast", "Cast", [x], {})
        cast = next(n for n in reversed(graph_def.node) if n.name == x)
        cast.attr["SrcT"].type, cast.attr["DstT"].type = block_dtype, dtype
    steps = [(step, [c.steps[k].const for c in chains])
             for k, step in enumerate(chains[0].steps) if step.op != _WIDEN]
    for k, (step, consts) in enumerate(_scale_then_shift(steps)):
        x = _apply(graph_def, step, consts, x, f"{name}/{k}")
    return x


def _scale_then_shift(steps: List[Tuple[Step, List]]) -> List[Tuple[Step, List]]:
    """A normalisation ``(x - mean) * scale`` (or ``/ std``) as ``x * scale - mean * scale``:
    the same values, but the converter folds a multiplication just before a dense layer
    into its weights (even when told not to, in int8) and then quantizes the layer's input
    unnormalised; a subtraction it leaves in place."""
    if len(steps) < 2:
        return steps
    (shift, means), (scale, factors) = steps[-2], steps[-1]
    if shift.op != "Sub" or shift.const_first or scale.op not in ("Mul", "RealDiv") or \
            scale.const_first:
        return steps
    shifted = [np.multiply(m, f) if scale.op == "Mul" else np.divide(m, f)
               for m, f in zip(means, factors)]
    shifted = [np.asarray(v, m.dtype) for v, m in zip(shifted, means)]
    return steps[:-2] + [(scale, factors), (shift, shifted)]


def _columns(graph_def, block: Block, indices: List[int], name: str, dtype: int) -> str:
    """The block's columns ``indices``, in that order: the block itself, a slice or a
    gather."""
    import tensorflow as tf

    source = f"{PREFIX}/{block.name}"
    if indices == list(range(len(block.inputs))):
        return source
    if indices == list(range(indices[0], indices[0] + len(indices))):
        return strided_slice(graph_def, f"{name}/slice", source, indices[0],
                              indices[-1] + 1, dtype)
    where = add_const(graph_def, f"{name}/indices", np.array(indices, np.int32), tf.int32)
    axis = add_const(graph_def, f"{name}/axis", np.int32(1), tf.int32)
    node = graph_def.node.add(name=f"{name}/gather", op="GatherV2", input=[source, where, axis])
    node.attr["Tparams"].type = dtype
    node.attr["Tindices"].type = tf.int32.as_datatype_enum
    node.attr["Taxis"].type = tf.int32.as_datatype_enum
    return node.name


def _apply(graph_def, step: Step, consts: List, x: str, name: str) -> str:
    """One step on the block's columns; a constant operand is the columns' constants."""
    import tensorflow as tf

    attrs = dict((k, v) for k, v in step.attrs)
    if step.const is None:
        return add_node(graph_def, name, step.op, [x], attrs)
    vector = np.stack(consts).astype(step.const.dtype)
    const = add_const(graph_def, f"{name}/values", vector, tf.as_dtype(vector.dtype))
    if step.op == _IMPUTE:
        dtype = {"T": attrs["T"]}
        gaps = add_node(graph_def, f"{name}/gaps", "NotEqual", [x, x], {**dtype, **_incompatible()})
        return add_node(graph_def, name, "SelectV2", [gaps, const, x], dtype)
    operands = [const, x] if step.const_first else [x, const]
    return add_node(graph_def, name, step.op, operands, attrs)


def _incompatible() -> Dict[str, bytes]:
    """NotEqual's attr: shapes that cannot broadcast are an error, as tf.not_equal has it."""
    from tensorflow.core.framework import attr_value_pb2

    return {"incompatible_shape_error": attr_value_pb2.AttrValue(b=True).SerializeToString()}


def add_node(graph_def, name: str, op: str, inputs: List[str], attrs: Dict[str, bytes]) -> str:
    node = graph_def.node.add(name=name, op=op, input=inputs)
    for key, value in attrs.items():
        node.attr[key].ParseFromString(value)
    return name
