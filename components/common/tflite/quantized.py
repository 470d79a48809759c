"""The quantized-model folder (freeze_quantize's ``tflite_model`` output) that export_tflite
reads back: one contract, beside the other TFLite contracts.

The folder holds ``model.tflite`` (the model in the chosen mode) and ``quantization.json``
(that mode, the signature it was converted from, the figures of every mode tried, the
converter options and the input layout with its blocks, common.tflite.packing; a folder
written before layouts were recorded took its columns). This module is the one place that
knows the folder's layout: freeze_quantize writes it here, export_tflite reads it here, and
neither imports the other.
"""

import json
from typing import Dict, Tuple

from tfkfp.components.common.model.bundle import MODEL_FILE
from tfkfp.components.common.platform import uris
from tfkfp.components.common.tflite import packing as tflite_packing
from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.options import COLUMNS

TFLITE_FILE = MODEL_FILE  # named as in a TFLite bundle (common.model.bundle)
QUANTIZATION_FILE = "quantization.json"


def write(tflite_dir: str, content: bytes, quantization: Dict) -> None:
    """Publish the .tflite bytes and their quantization.json into tflite_dir, all at once."""
    body = (json.dumps(quantization, indent=2) + "\n").encode()
    uris.publish_dir({TFLITE_FILE: content, QUANTIZATION_FILE: body}, tflite_dir)


def layout_json(layout: str, packing: tflite_packing.Packing) -> Dict:
    """quantization.json's record of the input layout and its blocks."""
    return {"input_layout": layout, "blocks": tflite_packing.describe(packing)}


def read(tflite_dir: str, signature: str) -> Tuple[bytes, str, str, tflite_packing.Packing]:
    """The .tflite bytes, mode, input layout and blocks of a tflite_model folder converted
    from signature."""
    path = uris.join(tflite_dir, TFLITE_FILE)
    if not uris.exists(path):
        raise QuantizeInputError(f"{tflite_dir} has no {TFLITE_FILE}: expected the "
                                 "tflite_model folder written by freeze_quantize")
    made_for = json.loads(uris.read_text(uris.join(tflite_dir, QUANTIZATION_FILE)))
    if made_for.get("signature") != signature:
        raise QuantizeInputError(f"{tflite_dir} was converted from signature "
                                 f"{made_for.get('signature')!r}, not {signature!r}")
    layout = made_for.get("input_layout", COLUMNS)
    with uris.open_file(path, "rb") as f:
        return (f.read(), made_for["mode"], layout,
                tflite_packing.from_description(made_for.get("blocks")))
