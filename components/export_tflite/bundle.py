"""What a deployable TFLite bundle says beside ``model.tflite``: its class names and
signature.json, what an app needs. The bundle's files and their writing are the bundle
contract's (common.model.bundle)."""

from typing import Dict, List

from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.model.bundle import LABELS_FILE
from tfkfp.components.common.platform import uris
from tfkfp.components.common.tflite import feeding as tflite_feeding
from tfkfp.components.common.tflite import litert
from tfkfp.components.common.tflite.feeding import Feeding
from tfkfp.components.common.tflite.packing import Packing
from tfkfp.components.common.tflite.parity import Reading

TFKFP_OUTPUTS = {"probabilities": "per-class probability, in labels.txt order",
                 "class_ids": "index of the top class in labels.txt",
                 "classes": "the top class name"}
REGRESSION_OUTPUT = "the predicted value (a regressor), in the label's units"


def labels_for(model_dir: str, schema: Schema, reading: Reading) -> List[str]:
    """Class names: a tfkfp model's own, else the Dataset label's vocabulary when the model's
    class scores index it (tflite_binding), else none."""
    if uris.exists(uris.join(model_dir, "assets", savedmodel.LABELS_FILE)):
        return savedmodel.load_labels(model_dir)
    if reading.scores and reading.accuracy and schema.label is not None:
        return [str(v) for v in schema.label.vocabulary]
    return []


def signature_json(content: bytes, signature: str, schema: Schema, labels: List[str],
                   mode: str, feeding: Feeding | None = None, binding=None,
                   task: str | None = None, packing: Packing | None = None) -> Dict:
    """Input and output names, shapes (-1: any), dtypes, quantization and normalisation, and
    how each input is fed: strings, and the value of a gap (tflite_feeding.describe); a
    packed input's ``columns`` in order, and its gaps column by column. ``binding``
    (common.tflite.binding): the column feeding each input, and the outputs' reading; None
    for a tfkfp model fed by name. ``task``: the one train recorded in the SavedModel
    (tfkfp_model.json), written on as it is; None for a model that records none (any
    SavedModel): read from its outputs. ``packing``: the model's blocks
    (common.tflite.packing); None or empty: one input per column."""
    interpreter = litert.load_interpreter(content, 1)
    runner = litert.signature_runner(interpreter, signature)
    details = litert.io_details(runner)
    feeding = feeding or Feeding({}, {}, {}, {})
    blocks = {b.name: b for b in (packing.blocks if packing else ())}
    for name, entry in details["inputs"].items():
        if name in blocks:
            entry.update(_block_entry(blocks[name], entry, schema, mode, feeding, binding))
        else:
            entry.update(_column_entry(name, entry, schema, mode, feeding, binding))
    reading = binding.reading if binding is not None else Reading()
    task = task or ("regression" if reading.values else "classification" if reading.scores
                    else "other")
    # the order of the model's input tensors, for an app that feeds them by position
    tensors = runner.get_input_details()
    order = sorted(tensors, key=lambda name: tensors[name]["index"])
    out = {"signature": signature, "quantization": mode, "task": task, **details,
           "input_order": order,
           "num_classes": len(labels), "outputs_meaning": _meaning(details, reading, labels)}
    if labels:
        out["labels"] = LABELS_FILE
    return out


def _column_of(name: str, schema: Schema, binding) -> str:
    """The Dataset column (its own name) a signature input takes."""
    fed_by = binding.columns if binding is not None else {}
    by_tensor = schema.column_of_tensor(name)
    return fed_by.get(name) or (by_tensor.name if by_tensor is not None else name)


def _feature(schema: Schema, name: str):
    return next((c for c in schema.features if c.name == name), None)


def _column_entry(name: str, entry: Dict, schema: Schema, mode: str, feeding: Feeding,
                  binding) -> Dict:
    """What signature.json says of an input that takes one column."""
    column = _column_of(name, schema, binding)
    normalization = _normalization(_feature(schema, column))
    if binding is not None and name in binding.resize:
        normalization += " (resized to the input's height and width)"
    if binding is not None and name in binding.channels:
        normalization += (" (grey repeated into RGB)" if binding.channels[name] == 3
                          else " (RGB to grey by ITU-R 601 luma)")
    return {"column": column, "normalization": normalization,
            **tflite_feeding.describe(name, entry, mode, feeding)}


def _block_entry(block, entry: Dict, schema: Schema, mode: str, feeding: Feeding,
                 binding) -> Dict:
    """What signature.json says of a packed input: its columns in order, and a gap's feed
    and fill column by column (null: the model does not impute that column)."""
    columns = [_column_of(n, schema, binding) for n in block.inputs]
    gaps = [tflite_feeding.describe(n, entry, mode, feeding)["missing"] for n in block.inputs]
    notes = list(dict.fromkeys(g["note"] for g in gaps))
    return {"columns": columns,
            "normalization": _normalization(_feature(schema, columns[0])),
            "missing": {"feed": [_one(g["feed"]) for g in gaps],
                        "fill": [_one(g.get("fill")) for g in gaps], "note": "; ".join(notes)}}


def _one(value):
    """A column's one value (a fill of shape [1] is that number)."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def app_metadata(signature: Dict, labels: List[str]) -> Dict:
    """What goes inside the model file for an app (common.tflite.metadata): signature.json's
    facts with the class names themselves in place of the labels file's name."""
    out = {k: v for k, v in signature.items() if k != "labels"}
    out["labels"] = list(labels)
    return out


def _meaning(details: Dict, reading: Reading, labels: List[str]) -> Dict[str, str]:
    if reading == Reading():
        return dict(TFKFP_OUTPUTS)
    order = "in labels.txt order" if labels else "one per class index"
    return {name: (f"class scores, {order}" if name == reading.scores
                   else REGRESSION_OUTPUT if name == reading.values
                   else "as the SavedModel returns it") for name in details["outputs"]}


def _normalization(column) -> str:
    if column is None:
        return "unknown: not a feature column of the model's schema"
    if column.dtype == "string" and column.encoding != "image":
        return "the raw string (see encoding); any lookup happens inside the model"
    if column.encoding == "image":
        h, w, c = column.image_shape
        return (f"decoded image resized to {h}x{w}x{c}, float32 scaled to [0, 1]; any "
                "further normalisation happens inside the model")
    return ("raw values as stored in the dataset (no scaling); any normalisation happens "
            "inside the model")
