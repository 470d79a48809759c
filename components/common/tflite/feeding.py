"""How each input of a converted model is fed: gaps (missing values) and strings.

The missing-values contract of tfkfp models: a gap in a float feature is NaN, imputed in the
graph as ``tf.where(tf.not_equal(x, x), fill, x)`` (NOT_EQUAL and SELECT_V2, both TFLite
builtins); a gap in a string feature is the empty string, which the model's lookup table maps
to its out-of-vocabulary index like any unseen value. The fill of each imputed input is read
from the frozen graph here.

In float modes the imputation runs in float inside the .tflite model, so NaN can be fed. The
modes with integer activations (int8, int16x8: ``integer_activations`` in common.tflite.modes)
may quantize a float input at the model's entry, where a NaN is lost; an int8 input
(``integer_io``) cannot hold one at all. There the fill itself (quantized for an int8 input)
is what a gap is fed as, and ``signature.json`` says so per input. tfkfp's own runners
replace NaN with the fill before feeding in every mode, which gives exactly the model's own
imputation.
"""

import dataclasses
from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.rewrite import (
    const_value,
    node_map,
    tensor_name,
    trace_to_input,
)

LISTED_VOCABULARY = 1000  # longer vocabularies are summarised, not listed, in signature.json
STRING_ENCODING = ("UTF-8 bytes of the raw value as stored in the dataset: no CSV quoting or "
                   "escaping, no trimming or case folding")


@dataclasses.dataclass(frozen=True)
class Feeding:
    fills: Dict[str, np.ndarray]  # float input -> what the model imputes for NaN (per example)
    vocabularies: Dict[str, List[str]]  # string input -> lookup keys in index order
    oov_index: Dict[str, int]  # string input -> the index of a value not in the vocabulary
    first_index: Dict[str, int]  # string input -> the index of vocabulary[0]


def from_frozen(frozen) -> Feeding:
    """The feeding facts of a tflite_graph.FrozenSignature."""
    fills = imputed_fills(frozen.graph_def, frozen.inputs)
    tables = [t for t in frozen.tables if t.input is not None and t.keys.dtype.kind in "OSU"]
    tables = list({t.input: t for t in reversed(tables)}.values())  # the first per input
    return Feeding(fills, {t.input: t.vocabulary() for t in tables},
                   {t.input: int(t.default) for t in tables},
                   {t.input: int(t.values.min()) if t.values.size else 0 for t in tables})


def imputed_fills(graph_def, inputs: Dict[str, str]) -> Dict[str, np.ndarray]:
    """{input: fill} for each input imputed as Select(NotEqual(x, x), fill, x), x being the
    input up to identities and reshapes and fill a constant."""
    nodes = node_map(graph_def)
    fills = {}
    for node in graph_def.node:
        if node.op not in ("Select", "SelectV2"):
            continue
        cond = nodes.get(tensor_name(node.input[0]))
        if cond is None or cond.op != "NotEqual":
            continue
        x = {_tensor(t) for t in (*cond.input[:2], node.input[2])}
        fill = const_value(nodes, node.input[1])
        name = trace_to_input(nodes, node.input[2], inputs) if len(x) == 1 else None
        if name is not None and fill is not None and fill.dtype.kind == "f":
            fills.setdefault(name, fill.astype(np.float32))
    return fills


def _tensor(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def describe(name: str, entry: Dict[str, Any], mode: str, feeding: Feeding) -> Dict[str, Any]:
    """What signature.json says about feeding one input, given its io_details entry."""
    if entry["dtype"] == "string":
        return _describe_string(name, feeding)
    fill = feeding.fills.get(name)
    if fill is None:
        return {"missing": {"feed": None, "note": "the model does not impute this input: a "
                            "gap has no value to feed"}}
    quant = entry.get("quantization")
    if quant and entry["dtype"] != "float32":
        fed = np.round(fill / quant["scale"] + quant["zero_point"]).astype(np.int64)
        return _missing(fed, fill, f"an {entry['dtype']} input cannot hold NaN: feed the "
                        "quantized fill, round(fill / scale) + zero_point")
    if _integer_activations(mode):
        return _missing(fill, fill, f"{mode} quantizes this input at the model's entry, where "
                        "a NaN is lost: feed the fill in place of a gap")
    return _missing("NaN", fill, "the model replaces NaN with the fill in its graph")


def _integer_activations(mode: str) -> bool:
    entry = tflite_modes.MODES.get(mode)
    return entry is not None and entry.integer_activations


def _missing(feed, fill: np.ndarray, note: str) -> Dict[str, Any]:
    return {"missing": {"feed": to_json(feed), "fill": to_json(fill), "note": note}}


def to_json(value):
    """Numbers as JSON; float32 by their shortest repr (0.1, not 0.10000000149011612)."""
    if isinstance(value, str):
        return value
    array = np.asarray(value)
    if array.dtype == np.float32:
        flat = [float(str(v)) for v in array.reshape(-1)]
        return flat[0] if array.ndim == 0 else np.asarray(flat).reshape(array.shape).tolist()
    return array.tolist()


def _describe_string(name: str, feeding: Feeding) -> Dict[str, Any]:
    out: Dict[str, Any] = {"encoding": STRING_ENCODING,
                           "missing": {"feed": "", "note": "a gap is the empty string"}}
    vocabulary = feeding.vocabularies.get(name)
    if vocabulary is None:
        return out
    lookup = {"vocabulary_size": len(vocabulary), "first_index": feeding.first_index[name],
              "out_of_vocabulary_index": feeding.oov_index[name],
              "note": "the model looks the string up itself; any value not in the vocabulary, "
                      "the empty string (a gap) included, gets the out-of-vocabulary index"}
    if len(vocabulary) <= LISTED_VOCABULARY:
        lookup["vocabulary"] = vocabulary
    out["lookup"] = lookup
    return out
