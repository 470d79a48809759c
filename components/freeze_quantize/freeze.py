"""Freeze a SavedModel signature into an inference GraphDef and check it still agrees.

Variables become constants and function calls are inlined, lookup tables are kept with their
content and one-hot encodings become builtins (common.tflite.graph); training-only and debug
nodes are stripped, Grappler folds constants, simplifies arithmetic (a batch norm on dense
outputs folds into the matmul) and prunes what the outputs do not need, and fused batch norms
after a convolution are folded into its weights plus a BiasAdd (fold.py). Each lookup table
becomes a ``HashTableV2`` filled by the node ``init_all_tables``, which a runner runs once
before the outputs (``run_graph`` does). The frozen graph is loaded back into TensorFlow and
run on the evaluation examples next to the SavedModel.
"""

import collections
import dataclasses
import json
from typing import Dict

import numpy as np

from tfkfp.components.common.tflite import graph as tflite_graph
from tfkfp.components.common.tflite.inputs import Examples
from tfkfp.components.freeze_quantize import fold

GRAPH_FILE = "frozen_graph.pb"
SPEC_FILE = "frozen_graph.json"


@dataclasses.dataclass(frozen=True)
class FrozenGraph:
    graph_def: object  # tf.compat.v1.GraphDef
    inputs: Dict[str, str]  # signature input name -> tensor name
    outputs: Dict[str, str]
    nodes_before: int
    nodes_after: int
    bytes_before: int
    ops_before: Dict[str, int]
    ops_after: Dict[str, int]
    tables: Dict[str, Dict]  # HashTableV2 node -> size and the input it looks up

    @property
    def bytes_after(self) -> int:
        return self.graph_def.ByteSize()

    def spec(self) -> Dict:
        return {"inputs": self.inputs, "outputs": self.outputs,
                "nodes": {"before": self.nodes_before, "after": self.nodes_after},
                "bytes": {"before": self.bytes_before, "after": self.bytes_after},
                "ops": {"before": self.ops_before, "after": self.ops_after},
                "tables": self.tables,
                "initializer": tflite_graph.INITIALIZER if self.tables else None}

    def files(self) -> Dict[str, bytes]:
        return {GRAPH_FILE: self.graph_def.SerializeToString(),
                SPEC_FILE: (json.dumps(self.spec(), indent=2) + "\n").encode()}


def freeze(loaded, fn, frozen: tflite_graph.FrozenSignature | None = None) -> FrozenGraph:
    """Freeze and optimise a concrete signature function of a loaded SavedModel (kept alive
    for its tables); ``frozen``: tflite_graph.freeze_signature(fn) when already done."""
    import tensorflow as tf

    frozen = frozen or tflite_graph.freeze_signature(fn)
    before = fn.graph.as_graph_def()
    nodes_before = list(before.node) + [n for f in before.library.function
                                        for n in f.node_def]
    variables = sum(int(np.prod(v.shape)) * v.dtype.size for v in fn.variables)
    inputs, outputs = frozen.inputs, frozen.outputs
    graph_def = tf.compat.v1.graph_util.remove_training_nodes(
        frozen.graph_def, protected_nodes=_node_names(outputs))
    graph_def = tflite_graph.optimize(graph_def,
                                      list(inputs.values()) + list(outputs.values()))
    graph_def, _ = fold.fold_batch_norms(graph_def)
    graph_def = tflite_graph.embed_tables(graph_def, frozen.tables)
    tables = {t.handle.split(":")[0]: {"size": int(t.keys.size), "input": t.input}
              for t in frozen.tables}
    return FrozenGraph(graph_def, inputs, outputs, len(nodes_before), len(graph_def.node),
                       before.ByteSize() + variables, _histogram(nodes_before),
                       _histogram(graph_def.node), tables)


def _node_names(tensors: Dict[str, str]):
    return [t.split(":")[0] for t in tensors.values()]


def _histogram(nodes) -> Dict[str, int]:
    return dict(collections.Counter(n.op for n in nodes).most_common())


def run_graph(graph_def, inputs: Dict[str, str], outputs: Dict[str, str],
              examples: Examples) -> Dict[str, np.ndarray]:
    """Run a frozen GraphDef in TensorFlow on the examples, its tables initialised first."""
    import tensorflow as tf

    def load():
        tf.compat.v1.import_graph_def(graph_def, name="")

    wrapped = tf.compat.v1.wrap_function(load, [])
    graph = wrapped.graph
    if any(n.name == tflite_graph.INITIALIZER for n in graph_def.node):
        wrapped.prune([], [graph.get_operation_by_name(tflite_graph.INITIALIZER)])()
    names = sorted(inputs)
    pruned = wrapped.prune([graph.get_tensor_by_name(inputs[n]) for n in names],
                           {k: graph.get_tensor_by_name(v) for k, v in outputs.items()})
    parts: Dict[str, list] = {}
    for batch, real in examples.batches(len(examples)):  # one call, or the fixed batches
        result = pruned(*[tf.constant(batch[n]) for n in names])
        for k, v in result.items():
            parts.setdefault(k, []).append(v.numpy()[:real])
    return {k: np.concatenate(v) for k, v in parts.items()}


def load_graph_def(path: str):
    """Read a frozen_graph.pb back (for checks and for consumers of the artifact)."""
    import tensorflow as tf

    from tfkfp.components.common.platform import uris

    graph_def = tf.compat.v1.GraphDef()
    with uris.open_file(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    return graph_def
