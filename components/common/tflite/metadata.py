"""What an app reads, inside the ``.tflite`` file: a JSON metadata buffer.

TFLite's flatbuffer schema holds a list of ``metadata`` entries, each a name and the index
of a buffer. export_tflite adds one named ``APP_METADATA`` (``tfkfp.app.json``) whose buffer
is UTF-8 JSON: the task, the signature to call, its inputs in order with the column each
takes, dtype, shape, quantization, normalisation and what to feed for a gap, the outputs
and what they mean, and the class names. The same facts are in ``signature.json`` and
``labels.txt`` beside the model; inside it they travel with the one file an app ships.

It is our own name and JSON, not tflite-support's ``TFLITE_METADATA`` flatbuffer (its
writers are unmaintained and have no tabular writer, and tools reading that name expect
its schema). The model is read and written with LiteRT's own flatbuffer tools
(``ai_edge_litert.tools.flatbuffer_utils``, the generated schema's object API), which an
app can read it back with too (see export_tflite's ``example_app``).
"""

import json
from typing import Dict

import numpy as np

APP_METADATA = "tfkfp.app.json"
FORMAT = "tfkfp-app/1"  # the JSON's "format": bumped when a field changes meaning


class MetadataError(ValueError):
    """A model file whose app metadata cannot be read; the message says what was found."""


def embed(content: bytes, app: Dict) -> bytes:
    """``content`` with ``app`` (plus ``format``) as its ``APP_METADATA`` buffer, replacing
    one already there; the graph, weights and other metadata are kept."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    entries = [m for m in (model.metadata or []) if _name(m) != APP_METADATA]
    buffer = schema.BufferT()
    text = json.dumps({"format": FORMAT, **app}, sort_keys=True).encode()
    buffer.data = np.frombuffer(text, np.uint8)  # packed as one vector, not byte by byte
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name = APP_METADATA
    entry.buffer = len(model.buffers) - 1
    model.metadata = entries + [entry]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def read(content: bytes) -> Dict | None:
    """The ``APP_METADATA`` JSON of a model file; None when it has none."""
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(content))
    entry = next((m for m in model.metadata or [] if _name(m) == APP_METADATA), None)
    if entry is None:
        return None
    data = bytes(model.buffers[entry.buffer].data)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise MetadataError(f"metadata {APP_METADATA!r} of the model is not JSON: {err}; "
                            f"it starts {data[:40]!r}") from err


def _name(entry) -> str:
    name = entry.name
    return name.decode() if isinstance(name, bytes) else str(name)
