"""Fold inference batch norms into the convolution or matmul in front of them.

Grappler folds the arithmetic of a Keras batch norm on dense outputs, but keeps
``FusedBatchNorm`` after a convolution (its remapper would fuse them into an internal op
that only TensorFlow's CPU kernels know). Here a ``FusedBatchNorm{,V2,V3}`` in inference mode
whose scale, offset, mean and variance are constants, fed by a ``Conv2D`` or ``MatMul`` (and
optionally a ``BiasAdd``) with constant weights used nowhere else, becomes that op with
rescaled weights plus a ``BiasAdd``, which every runtime has: ``w' = w * s`` and
``b' = (b - mean) * s + offset`` with ``s = scale / sqrt(variance + epsilon)``.
"""

from typing import Dict

import numpy as np

BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
FOLDABLE = ("Conv2D", "MatMul")


def fold_batch_norms(graph_def):
    """A copy of graph_def with every foldable batch norm folded; returns (graph, count)."""
    import tensorflow as tf

    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    nodes = {n.name: n for n in out.node}
    uses = _uses(out)
    folded = 0
    for bn in [n for n in out.node if n.op in BATCH_NORMS]:
        chain = _chain(bn, nodes, uses)
        if chain is None:
            continue
        op, weight, bias_add, bias = chain
        scale, offset, mean, variance = (_value(nodes[_name(i)]) for i in bn.input[1:5])
        factor = scale / np.sqrt(variance + bn.attr["epsilon"].f)
        w = _value(weight)
        transposed = op.op == "MatMul" and op.attr["transpose_b"].b
        _set(weight, w * (factor[:, None] if transposed else factor))
        b = _value(bias) if bias is not None else np.zeros_like(offset)
        new_bias = ((b - mean) * factor + offset).astype(w.dtype)
        dtype = bn.attr["T"].type
        if bias_add is not None:  # Conv2D -> BiasAdd -> BN: the BiasAdd takes the new bias
            _set(bias, new_bias)
            _rewrite(bn, "Identity", [bias_add.name], dtype)
        else:
            const = out.node.add(name=f"{bn.name}/folded_bias", op="Const")
            const.attr["dtype"].type = weight.attr["dtype"].type
            _set(const, new_bias)
            _rewrite(bn, "BiasAdd", [bn.input[0], const.name], dtype)
        folded += 1
    return out, folded


def _chain(bn, nodes, uses):
    """(op, weight const, bias_add or None, bias const or None) if bn can be folded."""
    params = [nodes.get(_name(i)) for i in bn.input[1:5]]
    if (bn.attr["is_training"].b or bn.attr["data_format"].s not in (b"", b"NHWC")
            or any(p is None or p.op != "Const" for p in params)
            or any(uses.get(f"{bn.name}:{k}", 0) for k in range(1, 6))):
        return None
    op = nodes.get(_name(bn.input[0]))
    bias_add = bias = None
    if op is not None and op.op == "BiasAdd":
        bias_add, bias = op, nodes.get(_name(op.input[1]))
        op = nodes.get(_name(op.input[0]))
        if bias is None or bias.op != "Const" or uses.get(bias.name) != 1 \
                or uses.get(bias_add.name) != 1:
            return None
    if op is None or op.op not in FOLDABLE or uses.get(op.name) != 1:
        return None
    weight = nodes.get(_name(op.input[1]))
    if weight is None or weight.op != "Const" or uses.get(weight.name) != 1:
        return None
    return op, weight, bias_add, bias


def _value(node) -> np.ndarray:
    import tensorflow as tf

    return tf.make_ndarray(node.attr["value"].tensor)


def _set(node, value: np.ndarray) -> None:
    import tensorflow as tf

    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))


def _rewrite(node, op: str, inputs, dtype) -> None:
    del node.input[:]
    node.input.extend(inputs)
    node.op = op
    node.ClearField("attr")
    node.attr["T"].type = dtype


def _name(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _uses(graph_def) -> Dict[str, int]:
    """How often each node (by name) and each non-default output (name:k) is consumed."""
    uses: Dict[str, int] = {}
    for node in graph_def.node:
        for tensor in node.input:
            uses[_name(tensor)] = uses.get(_name(tensor), 0) + 1
            if ":" in tensor and not tensor.endswith(":0"):
                uses[tensor.lstrip("^")] = uses.get(tensor.lstrip("^"), 0) + 1
    return uses
