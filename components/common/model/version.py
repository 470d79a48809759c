"""Which model answered: the ``model_version`` of ``tfkfp serve``'s Open Inference Protocol
answers (batch_predict's endpoint mode records it per row) and of stream_predict's
prediction messages.

The version folder's number where the model's path ends in one (TF Serving's layout, the
versions deploy_model publishes); else the artifact's fingerprint: a SavedModel's
``fingerprint.pb`` as TensorFlow prints it (``tf.saved_model.experimental
.read_fingerprint(path).singleprint()``), a TFLite model's ``sha256:`` and the first 16 hex
digits of its ``model.tflite``. None for a SavedModel written without a fingerprint (before
TensorFlow 2.12): the answer then carries no version, as the protocol allows.
"""

import hashlib

from tfkfp.components.common.model.bundle import MODEL_FILE, SAVEDMODEL, TFLITE, kind_of
from tfkfp.components.common.platform import uris

FINGERPRINT_FILE = "fingerprint.pb"  # what tf.saved_model.save writes beside saved_model.pb
DIGEST_CHARS = 16


def version_folder(model_uri: str) -> str | None:
    """The number that ends the model's path (TF Serving's version folder, ``.../model/7``,
    as deploy_model publishes versions); None when it ends otherwise."""
    last = model_uri.rstrip("/").rpartition("/")[2]
    return str(int(last)) if last.isascii() and last.isdigit() and len(last) < 19 else None


def answered_version(model_uri: str) -> str | None:
    """The model_version answers carry for the model at ``model_uri`` (see the module)."""
    folder = version_folder(model_uri)
    if folder is not None:
        return folder
    kind = kind_of(model_uri)
    if kind == SAVEDMODEL:
        return savedmodel_fingerprint(model_uri)
    tflite = uris.join(model_uri, MODEL_FILE) if kind == TFLITE else model_uri
    return tflite_digest(tflite) if tflite.endswith(".tflite") else None


def savedmodel_fingerprint(model_dir: str) -> str | None:
    """TensorFlow's one-line fingerprint of a SavedModel; None without fingerprint.pb."""
    path = uris.join(model_dir, FINGERPRINT_FILE)
    if not uris.exists(path):
        return None
    import tensorflow as tf
    from tensorflow.core.protobuf import fingerprint_pb2

    with uris.open_file(path) as f:
        proto = fingerprint_pb2.FingerprintDef.FromString(f.read())
    return tf.saved_model.experimental.Fingerprint.from_proto(proto).singleprint()


def tflite_digest(path: str) -> str:
    """``sha256:`` and the first hex digits of the model file's SHA-256."""
    digest = hashlib.sha256()
    with uris.open_file(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()[:DIGEST_CHARS]}"
