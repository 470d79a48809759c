"""Freezing a SavedModel signature for TFLite, lookup tables and one-hot encodings included.

``convert_variables_to_constants_v2`` turns variables into constants but leaves a lookup
table (a Keras ``StringLookup``) as a resource placeholder, so the frozen graph cannot run
and cannot be converted on its own. Here each table's keys and values are read out of the
loaded model (``LookupTableExportV2``) and kept beside the graph; ``embed_tables`` puts
them back as a ``HashTableV2`` with an initializer node (the TF1 ``init_all_tables``
convention), and ``write_convertible`` saves the graph with real ``StaticHashTable``s as a
SavedModel the TFLite converter turns into its ``HASHTABLE`` builtins. Keras one-hot and
multi-hot encodings are ``DenseBincount``, which has no TFLite builtin; ``tflite_rewrite``
replaces them with builtins (a boolean ``OneHot`` reduced by ``Any``, or counted).
``optimize`` runs Grappler on a frozen graph (freeze_quantize's frozen graph, and the packed
layout's, common.tflite.vectorise).
"""

import dataclasses
import hashlib
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.tflite import rewrite as tflite_rewrite
from tfkfp.components.common.tflite.rewrite import node_map, tensor_name, trace_to_input

INITIALIZER = "init_all_tables"


class FreezeError(ValueError):
    """A signature that cannot be frozen: the message names the table or op."""


@dataclasses.dataclass(frozen=True)
class Table:
    """One lookup table of the frozen graph, with its content."""

    handle: str  # the resource placeholder standing for it in the frozen graph (tensor name)
    keys: np.ndarray
    values: np.ndarray
    default: np.ndarray  # what the graph's lookup returns for a key not in the table
    input: str | None  # the signature input looked up in it, when the graph says so

    def vocabulary(self) -> List:
        """The keys in the order of their values (a StringLookup's vocabulary order)."""
        return [_text(k) for k in self.keys[np.argsort(self.values, kind="stable")]]


@dataclasses.dataclass(frozen=True)
class FrozenSignature:
    graph_def: object  # tf.compat.v1.GraphDef: tables still resource placeholders
    inputs: Dict[str, str]  # signature input name -> tensor name
    outputs: Dict[str, str]
    tables: Tuple[Table, ...]
    rewritten: Tuple[str, ...]  # nodes rewritten to builtins (DenseBincount)

    @property
    def needs_rebuild(self) -> bool:
        """The SavedModel as saved does not convert to builtins; write_convertible's does."""
        return bool(self.rewritten)


def freeze_signature(fn) -> FrozenSignature:
    """Freeze a concrete signature function of a loaded SavedModel (see the module doc)."""
    import tensorflow as tf
    from tensorflow.python.framework import convert_to_constants

    frozen = convert_to_constants.convert_variables_to_constants_v2(fn)
    names = sorted(fn.structured_input_signature[1])
    features = [t for t in frozen.inputs if t.dtype != tf.resource]
    inputs = {n: t.name for n, t in zip(names, features)}
    outputs = {n: t.name for n, t in zip(sorted(fn.structured_outputs), frozen.outputs)}
    graph_def = frozen.graph.as_graph_def()
    handles = [t.name for t in frozen.inputs if t.dtype == tf.resource]
    tables = tuple(_table(fn, graph_def, h, inputs) for h in handles)
    rewritten = tflite_rewrite.rewrite_bincounts(graph_def)
    return FrozenSignature(graph_def, inputs, outputs, tables, tuple(rewritten))


def _table(fn, graph_def, handle: str, inputs: Dict[str, str]) -> Table:
    import tensorflow as tf

    external = {internal.name: ext for ext, internal in fn.graph.captures}.get(handle)
    finds = _lookups(graph_def, handle)
    if external is None or not finds:
        raise FreezeError(f"the signature captures a resource {handle!r} that is not a lookup "
                          "table read by LookupTableFindV2; only variables and lookup tables "
                          "can be frozen")
    find = finds[0]
    keys, values = tf.raw_ops.LookupTableExportV2(
        table_handle=external, Tkeys=tf.as_dtype(find.attr["Tin"].type),
        Tvalues=tf.as_dtype(find.attr["Tout"].type))
    nodes = node_map(graph_def)
    default = tflite_rewrite.const_value(nodes, find.input[2])
    if default is None:
        raise FreezeError(f"lookup {find.name!r}: its default value is not a constant")
    looked_up = trace_to_input(nodes, find.input[1], inputs)
    return Table(handle, keys.numpy(), values.numpy(), default, looked_up)


def _lookups(graph_def, handle: str) -> list:
    """LookupTableFindV2 nodes reading the table behind a resource placeholder."""
    nodes = node_map(graph_def)
    aliases = {tensor_name(handle)}
    changed = True
    while changed:  # the handle reaches the lookup through Identity nodes
        changed = False
        for node in graph_def.node:
            if node.op == "Identity" and node.name not in aliases and \
                    tensor_name(node.input[0]) in aliases:
                aliases.add(node.name)
                changed = True
    return [nodes[n.name] for n in graph_def.node
            if n.op == "LookupTableFindV2" and tensor_name(n.input[0]) in aliases]


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value.item()


def embed_tables(graph_def, tables: Tuple[Table, ...]):
    """A copy of graph_def whose table placeholders are HashTableV2 nodes, initialised by
    running the INITIALIZER node once (as TF1 frozen graphs did)."""
    import tensorflow as tf

    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    if not tables:
        return out
    nodes = node_map(out)
    inits = []
    for table in tables:
        node = nodes[tensor_name(table.handle)]
        key_dtype = tf.as_dtype(table.keys.dtype if table.keys.dtype.kind != "O" else tf.string)
        value_dtype = tf.as_dtype(table.values.dtype)
        node.ClearField("attr")
        node.op = "HashTableV2"
        node.attr["key_dtype"].type = key_dtype.as_datatype_enum
        node.attr["value_dtype"].type = value_dtype.as_datatype_enum
        node.attr["shared_name"].s = _shared_name(table).encode()
        keys = tflite_rewrite.add_const(out, f"{node.name}/keys", table.keys, key_dtype)
        values = tflite_rewrite.add_const(out, f"{node.name}/values", table.values, value_dtype)
        init = out.node.add(name=f"{node.name}/init", op="InitializeTableV2",
                            input=[node.name, keys, values])
        init.attr["Tkey"].type = key_dtype.as_datatype_enum
        init.attr["Tval"].type = value_dtype.as_datatype_enum
        inits.append(f"^{init.name}")
    out.node.add(name=INITIALIZER, op="NoOp", input=inits)
    return out


def _shared_name(table: Table) -> str:
    """Named by content: graphs loaded twice in one process share one identical table."""
    digest = hashlib.sha256()
    for part in (table.keys, table.values):
        digest.update(str(part.dtype).encode())
        digest.update(b"\0".join(k if isinstance(k, bytes) else str(k).encode()
                                 for k in part.tolist()))
    return f"tfkfp_table_{digest.hexdigest()[:20]}"


def write_convertible(frozen: FrozenSignature, signature: str, fn, export_dir: str,
                      specs: Dict | None = None) -> str:
    """Save the frozen graph as a SavedModel with one signature, its tables as real
    StaticHashTables (initialised by the SavedModel, which the converter turns into
    HASHTABLE builtins run once). ``specs``: the signature's inputs (name -> TensorSpec),
    those of ``fn`` by default."""
    import tensorflow as tf

    module = tf.Module()
    module.tables = [tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(t.keys, t.values), t.default) for t in frozen.tables]
    specs = {n: tf.TensorSpec(s.shape, s.dtype, name=n)
             for n, s in (specs or fn.structured_input_signature[1]).items()}
    names = sorted(frozen.outputs)

    @tf.function(input_signature=[specs])
    def serve(features):
        feeds = {frozen.inputs[n]: features[n] for n in frozen.inputs}
        feeds.update({t.handle: tf.identity(table.resource_handle)
                      for t, table in zip(frozen.tables, module.tables)})
        got = tf.graph_util.import_graph_def(frozen.graph_def, input_map=feeds, name="frozen",
                                             return_elements=[frozen.outputs[n] for n in names])
        return dict(zip(names, got))

    tf.saved_model.save(module, export_dir,
                        signatures={signature: serve.get_concrete_function()})
    return export_dir


OPTIMIZERS = ("pruning", "debug_stripper", "constfold", "shape", "arithmetic", "dependency",
              "constfold")


def optimize(graph_def, fetches: List[str]):
    """Grappler on a frozen graph: constants folded, arithmetic simplified, what ``fetches``
    (tensor names) do not need pruned."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
    from tensorflow.python.framework import importer, ops
    from tensorflow.python.grappler import tf_optimizer
    from tensorflow.python.training import saver

    with ops.Graph().as_default() as g:
        importer.import_graph_def(graph_def, name="")
        meta_graph = saver.export_meta_graph(graph_def=g.as_graph_def(add_shapes=True),
                                             graph=g)
    fetch = meta_graph_pb2.CollectionDef()
    fetch.node_list.value.extend(fetches)
    meta_graph.collection_def["train_op"].CopyFrom(fetch)
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.optimizers.extend(OPTIMIZERS)
    rewrite.min_graph_nodes = -1  # optimise even small graphs
    return tf_optimizer.OptimizeGraph(config, meta_graph)
