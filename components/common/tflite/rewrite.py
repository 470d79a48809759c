"""GraphDef surgery that makes a frozen graph convert to TFLite builtins.

Keras encodes one-hot and multi-hot (``StringLookup``, ``IntegerLookup``, ``CategoryEncoding``
with ``output_mode="one_hot"|"multi_hot"|"count"``) with ``tf.math.bincount``, i.e.
``DenseBincount``, which TFLite has only as a TensorFlow (Flex) op, and apps shipping the
plain LiteRT runtime have no Flex delegate. Without weights, ``DenseBincount`` over the
last axis of a rank-1 or rank-2 input is a boolean ``OneHot(input, size)`` reduced over the
axis before last: ``Any`` then ``Cast`` (binary output) or ``Cast`` then ``Sum`` (counts);
values outside ``[0, size)`` count nowhere in both. The one-hot is boolean because the int8
quantizer gives a float ``ONE_HOT`` its consumer's scale but not its on value (1.0 came out
as 127). The size Keras passes is ``min(depth, max(depth, ...))``, i.e. ``depth``: folding it
keeps the one-hot width static, which calibration needs.
"""

from typing import Dict, List

import numpy as np

_PASS_THROUGH = ("Identity", "Reshape", "ExpandDims", "Squeeze")


def tensor_name(tensor: str) -> str:
    """The node name of a tensor or control input (``^a``, ``a:1`` -> ``a``)."""
    return tensor.lstrip("^").split(":")[0]


def node_map(graph_def) -> Dict[str, object]:
    return {n.name: n for n in graph_def.node}


def const_value(nodes: Dict, tensor: str) -> np.ndarray | None:
    """The value of a tensor that is a Const (through Identity nodes), else None."""
    import tensorflow as tf

    node = nodes.get(tensor_name(tensor))
    for _ in range(64):
        if node is None:
            return None
        if node.op == "Const":
            return tf.make_ndarray(node.attr["value"].tensor)
        if node.op != "Identity":
            return None
        node = nodes.get(tensor_name(node.input[0]))
    return None


def trace_to_input(nodes: Dict, tensor: str, inputs: Dict[str, str]) -> str | None:
    """The signature input a tensor is, up to reshapes and identities; None if it is not."""
    by_node = {tensor_name(t): name for name, t in inputs.items()}
    name = tensor_name(tensor)
    for _ in range(64):
        if name in by_node:
            return by_node[name]
        node = nodes.get(name)
        if node is None or node.op not in _PASS_THROUGH:
            return None
        name = tensor_name(node.input[0])
    return None


def add_const(graph_def, name: str, value, dtype) -> str:
    """Add a Const node; returns its name."""
    import tensorflow as tf

    node = graph_def.node.add(name=name, op="Const")
    node.attr["dtype"].type = tf.as_dtype(dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return name


def rewrite_bincounts(graph_def) -> List[str]:
    """Rewrite every weightless DenseBincount in place; returns the rewritten node names."""
    nodes = node_map(graph_def)
    done = []
    for node in [n for n in graph_def.node if n.op == "DenseBincount"]:
        weights = const_value(nodes, node.input[2])
        if weights is None or weights.size:
            continue  # weighted counts have no builtin form; the converter will name the op
        _rewrite(graph_def, nodes, node)
        done.append(node.name)
    return done


def _rewrite(graph_def, nodes: Dict, node) -> None:
    import tensorflow as tf

    dtype, index_dtype = node.attr["T"].type, node.attr["Tidx"].type
    depth = _depth(graph_def, nodes, node.name, node.input[1], index_dtype)
    # boolean, then cast: see the module docstring (a float one-hot breaks int8)
    on = add_const(graph_def, f"{node.name}/on", np.bool_(True), tf.bool)
    off = add_const(graph_def, f"{node.name}/off", np.bool_(False), tf.bool)
    one_hot = _add(graph_def, f"{node.name}/one_hot", "OneHot", [node.input[0], depth, on, off],
                   T=tf.bool.as_datatype_enum, TI=index_dtype, axis=-1)
    axis = add_const(graph_def, f"{node.name}/axis", np.int32(-2), tf.int32)
    reduce_attrs = {"Tidx": tf.int32.as_datatype_enum, "keep_dims": False}
    if node.attr["binary_output"].b:  # present anywhere in the row: Any, then the cast
        found = _add(graph_def, f"{node.name}/any", "Any", [one_hot, axis], **reduce_attrs)
        _reset(node, "Cast", [found], SrcT=tf.bool.as_datatype_enum, DstT=dtype)
    else:  # counts: the cast, then Sum
        cast = _add(graph_def, f"{node.name}/cast", "Cast", [one_hot],
                    SrcT=tf.bool.as_datatype_enum, DstT=dtype)
        _reset(node, "Sum", [cast, axis], T=dtype, **reduce_attrs)


def _depth(graph_def, nodes: Dict, name: str, size: str, index_dtype) -> str:
    """The one-hot depth: a constant when it can be folded, else size cast to int32."""
    import tensorflow as tf

    depth = _static_depth(nodes, size)
    if depth is not None:
        return add_const(graph_def, f"{name}/depth", np.int32(depth), tf.int32)
    return _add(graph_def, f"{name}/depth", "Cast", [size], SrcT=index_dtype,
                DstT=tf.int32.as_datatype_enum)


def _add(graph_def, name: str, op: str, inputs, **attrs) -> str:
    node = graph_def.node.add(name=name, op=op, input=inputs)
    _set_attrs(node, attrs)
    return name


def _reset(node, op: str, inputs, **attrs) -> None:
    node.ClearField("attr")
    del node.input[:]
    node.op = op
    node.input.extend(inputs)
    _set_attrs(node, attrs)


def _set_attrs(node, attrs) -> None:
    for key, value in attrs.items():
        if isinstance(value, bool):
            node.attr[key].b = value
        elif key == "axis":
            node.attr[key].i = value
        else:  # a dtype enum
            node.attr[key].type = value


def _static_depth(nodes: Dict, size: str) -> int | None:
    """``size`` as a constant: a Const, or Keras's ``Minimum(d, Maximum(d, ...))``."""
    value = const_value(nodes, size)
    if value is not None:
        return int(value)
    node = nodes.get(tensor_name(size))
    if node is None or node.op != "Minimum":
        return None
    for outer, inner in ((0, 1), (1, 0)):
        bound = const_value(nodes, node.input[outer])
        other = nodes.get(tensor_name(node.input[inner]))
        if bound is None or other is None or other.op != "Maximum":
            continue
        floors = [const_value(nodes, t) for t in other.input]
        if any(f is not None and int(f) == int(bound) for f in floors):
            return int(bound)
    return None
