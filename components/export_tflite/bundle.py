"""The files of a deployable TFLite bundle beside ``model.tflite``: what an app needs."""

import json
from typing import Dict, List

from tfkfp.components.common import litert, tflite_feeding
from tfkfp.components.common.schema import Schema
from tfkfp.components.common.tflite_feeding import Feeding

MODEL_FILE = "model.tflite"
LABELS_FILE = "labels.txt"
SIGNATURE_FILE = "signature.json"
VALIDATION_FILE = "validation.json"


def signature_json(content: bytes, signature: str, schema: Schema, labels: List[str],
                   mode: str, feeding: Feeding | None = None) -> Dict:
    """Input and output names, shapes (-1: any), dtypes, quantization and normalisation, and
    how each input is fed: strings, and the value of a gap (tflite_feeding.describe)."""
    interpreter = litert.load_interpreter(content, 1)
    details = litert.io_details(litert.signature_runner(interpreter, signature))
    columns = {c.name: c for c in schema.features}
    feeding = feeding or Feeding({}, {}, {}, {})
    for name, entry in details["inputs"].items():
        entry["normalization"] = _normalization(columns.get(name))
        entry.update(tflite_feeding.describe(name, entry, mode, feeding))
    return {"signature": signature, "quantization": mode, **details,
            "labels": LABELS_FILE, "num_classes": len(labels),
            "outputs_meaning": {"probabilities": "per-class probability, in labels.txt order",
                                "class_ids": "index of the top class in labels.txt",
                                "classes": "the top class name"}}


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


def files(content: bytes, labels: List[str], signature: Dict, validation: Dict
          ) -> Dict[str, bytes]:
    return {MODEL_FILE: content,
            LABELS_FILE: ("\n".join(labels) + "\n").encode(),
            SIGNATURE_FILE: (json.dumps(signature, indent=2) + "\n").encode(),
            VALIDATION_FILE: (json.dumps(validation, indent=2) + "\n").encode()}
