"""The frozen graph rewritten to take packed inputs (common.tflite.packing), with one
normalisation per block rather than one per column.

Each packed column's placeholder becomes a slice of its block's placeholder (cast back to
the column's dtype for whole numbers). A tabular model then still preprocesses every column
on its own and concatenates the results: per column a reshape to ``[batch, 1]``, the gap
fill ``Select(NotEqual(x, x), fill, x)``, a subtraction and a multiplication, i.e. five ops
and their tensors, names and constants per column, most of a small model's file. Where
inputs of a ``ConcatV2`` along the last axis are such chains (common.tflite.chains), alike
op for op and reading columns of one block, they are replaced by the same chain run once on
those columns of the block. Groups are formed wherever their members sit in the
concatenation (float and whole-number columns interleaved, as in the schema), and one
gather after it puts the features back in the model's order; where a width in the
concatenation is not static, only neighbours are grouped. Anything else is left as it is
and still fed from the block's slices.
"""

import dataclasses
from typing import Dict, List

import numpy as np

from tfkfp.components.common.tflite.chains import (
    PREFIX,
    Chain,
    chain_of,
    strided_slice,
    vectorised,
)
from tfkfp.components.common.tflite.packing import Block, Packing
from tfkfp.components.common.tflite.rewrite import add_const, const_value, node_map, tensor_name


def pack_graph(graph_def, inputs: Dict[str, str], packing: Packing, dtypes: Dict[str, int]):
    """A copy of graph_def taking packing's blocks (placeholders named as the blocks) in place
    of their columns; ``inputs``: signature input -> tensor name; ``dtypes``: signature
    input -> its DataType enum. Returns (graph_def, {block name: its tensor name})."""
    import tensorflow as tf

    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    nodes = node_map(out)
    placeholders = {}
    for block in packing.blocks:
        placeholders[block.name] = _placeholder(out, block)
        for i, name in enumerate(block.inputs):
            _slice_into(out, nodes[tensor_name(inputs[name])], block, i, dtypes[name])
    return out, {name: f"{node}:0" for name, node in placeholders.items()}


def _placeholder(graph_def, block: Block) -> str:
    import tensorflow as tf

    name = f"{PREFIX}/{block.name}"
    node = graph_def.node.add(name=name, op="Placeholder")
    node.attr["dtype"].type = tf.as_dtype(block.dtype).as_datatype_enum
    shape = tf.TensorShape([None, len(block.inputs)]).as_proto()
    node.attr["shape"].shape.CopyFrom(shape)
    return name


def _slice_into(graph_def, node, block: Block, index: int, dtype: int) -> None:
    """Turn a column's placeholder into column ``index`` of the block, of the column's
    dtype, keeping its name (its consumers are unchanged)."""
    import tensorflow as tf

    block_dtype = tf.as_dtype(block.dtype).as_datatype_enum
    sliced = strided_slice(graph_def, f"{node.name}/{PREFIX}_slice", f"{PREFIX}/{block.name}",
                            index, index + 1, block_dtype, shrink=True)
    node.ClearField("attr")
    if dtype == block_dtype:
        node.op = "Identity"
        node.input.append(sliced)
        node.attr["T"].type = dtype
        return
    node.op = "Cast"
    node.input.append(sliced)
    node.attr["SrcT"].type = block_dtype
    node.attr["DstT"].type = dtype


def vectorise_concats(graph_def, inputs: Dict[str, str], packing: Packing,
                      dtypes: Dict[str, int]) -> List[str]:
    """Rewrite in place every ConcatV2 whose inputs hold alike per-column chains of one block
    (see the module docstring); ``inputs`` and ``dtypes`` as for pack_graph. Returns the
    chain outputs it replaced."""
    nodes = node_map(graph_def)
    position = packing.packed
    columns = {tensor_name(inputs[name]): name for name in position}
    replaced = []
    for concat in [n for n in graph_def.node if n.op == "ConcatV2"]:
        if not _last_axis(nodes, concat):
            continue
        data = list(concat.input[:-1])
        chains = [chain_of(nodes, t, columns) for t in data]
        widths = _widths(graph_def, data)
        groups = _groups(chains, position, dtypes, widths)
        if not groups:
            continue
        order = []  # (the new concat's inputs, in order; the old inputs each one holds)
        for i, tensor in enumerate(data):
            group = next((g for g in groups if i in g), None)
            if group is None:
                order.append((tensor, [i]))
            elif group[0] == i:
                output = vectorised(graph_def, [chains[k] for k in group], position,
                                     f"{tensor_name(tensor)}/{PREFIX}", dtypes)
                order.append((output, group))
                replaced += [data[k] for k in group]
        _reconcat(concat, [t for t, _ in order])
        if None not in widths:  # else the groups are runs: the order is the model's
            _restore_order(graph_def, concat, [k for _, held in order for k in held], widths)
    return replaced


def _groups(chains: List[Chain | None], position, dtypes: Dict[str, int],
            widths: List[int | None]) -> List[List[int]]:
    """Concat inputs whose chains read columns of one dtype of one block alike, grouped:
    wherever they are in the concat when every input's width is known (the concat's order
    is then restored by one gather), else runs of consecutive ones."""
    keys = [(position[c.column][0].name, dtypes[c.column], c.shape()) if c else None
            for c in chains]
    anywhere = None not in widths
    groups: Dict = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        run = groups.get(key) if anywhere else groups.get((key, i - 1))
        if run is None:
            run = []
        run.append(i)
        groups[key if anywhere else (key, i)] = run
    found = list({id(g): g for g in groups.values()}.values())
    return [g for g in found if len(g) > 1 or anywhere]


def _widths(graph_def, tensors: List[str]) -> List[int | None]:
    """The static last dimension of each tensor (None where it is not known)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    out = []
    for tensor in tensors:
        shape = graph.get_tensor_by_name(tensor if ":" in tensor else f"{tensor}:0").shape
        out.append(shape[-1] if shape.rank == 2 else None)
    return out


def _restore_order(graph_def, concat, held: List[int], widths: List[int]) -> None:
    """After the concat, gather its columns back into the model's order (nothing to do
    when the groups kept it)."""
    import tensorflow as tf

    starts = np.cumsum([0] + [widths[k] for k in held])
    at = {k: starts[i] for i, k in enumerate(held)}
    permutation = [int(at[k]) + j for k in range(len(widths)) for j in range(widths[k])]
    if permutation == list(range(len(permutation))):
        return
    name = concat.name
    concat.name = f"{name}/{PREFIX}_grouped"
    where = add_const(graph_def, f"{name}/{PREFIX}_order", np.array(permutation, np.int32),
                      tf.int32)
    axis = add_const(graph_def, f"{name}/{PREFIX}_axis", np.int32(-1), tf.int32)
    node = graph_def.node.add(name=name, op="GatherV2", input=[concat.name, where, axis])
    node.attr["Tparams"].type = concat.attr["T"].type
    node.attr["Tindices"].type = tf.int32.as_datatype_enum
    node.attr["Taxis"].type = tf.int32.as_datatype_enum


def _reconcat(concat, kept: List[str]) -> None:
    """The concat of ``kept``; of one tensor, that tensor (ConcatV2 takes two or more)."""
    axis = concat.input[-1]
    del concat.input[:]
    if len(kept) > 1:
        concat.input.extend(kept + [axis])
        concat.attr["N"].i = len(kept)
        return
    dtype = concat.attr["T"].type
    concat.ClearField("attr")
    concat.op = "Identity"
    concat.input.append(kept[0])
    concat.attr["T"].type = dtype


def _last_axis(nodes, concat) -> bool:
    axis = const_value(nodes, concat.input[-1])
    return axis is not None and int(axis) in (-1, 1)


def packed_signature(frozen, packing: Packing, specs: Dict):
    """(a tflite_graph.FrozenSignature taking packing's blocks, its input specs): constants
    folded first (so each column's constants are seen), the columns sliced from the blocks,
    the per-column chains vectorised and what nothing reads any more pruned."""
    import tensorflow as tf

    from tfkfp.components.common.tflite.graph import optimize

    fetches = list(frozen.inputs.values()) + list(frozen.outputs.values())
    graph_def = optimize(frozen.graph_def, fetches)
    dtypes = {n: s.dtype.as_datatype_enum for n, s in specs.items()}
    graph_def, blocks = pack_graph(graph_def, frozen.inputs, packing, dtypes)
    vectorise_concats(graph_def, frozen.inputs, packing, dtypes)
    packed = packing.packed
    inputs = {n: t for n, t in frozen.inputs.items() if n not in packed}
    graph_def = optimize(graph_def, list(inputs.values()) + list(blocks.values())
                         + list(frozen.outputs.values()))
    new_specs = {n: specs[n] for n in inputs}
    new_specs.update({b.name: tf.TensorSpec([None, len(b.inputs)], tf.as_dtype(b.dtype))
                      for b in packing.blocks})
    return dataclasses.replace(frozen, graph_def=graph_def, inputs={**inputs, **blocks},
                               rewritten=frozen.rewritten + (PREFIX,)), new_specs


def float_nodes(content: bytes) -> List[str]:
    """The ops of a converted model that this module added (every part of a fused op's name
    is one of ours), by the names the TFLite quantizer's denylist takes."""
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    names = {t.name.decode() for g in model.subgraphs for t in g.tensors}
    return sorted(n for n in names if all(PREFIX in part for part in n.split(";")))
