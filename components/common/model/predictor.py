"""The model runtime: a tfkfp SavedModel or a TFLite model behind one API, the ``Predictor``.

batch_predict, serve and deploy_model load and call models through it, so a row gets the
same answer in a batch, online and at the deploy gate. Both kinds are called on raw feature
columns (the ``serving_raw`` signature, which is also what the TFLite model was converted
from): records are parsed once by the reader, so key columns can be carried through and a bad
record can be told apart from its batch. String columns are fed as they are read (UTF-8
bytes; the model looks them up itself). A TFLite bundle's ``signature.json`` gives the fill
of each imputed float input: a gap (NaN) is fed as it, since a NaN does not survive a
quantized input (common.data.missing). The task (classification or regression) is read from
the artifact: tfkfp_model.json of a SavedModel, signature.json of a bundle
(common.model.bundle). Callers inject a ``Predictor``, so tests and benchmarks can hand them
a small real one. A model that cannot be loaded, or does not fit
the data, is refused with ``ModelInputError`` naming what was found and what was expected.
"""

from tfkfp.components.common.model.bundle import MODEL_FILE, SAVEDMODEL, TFLITE, kind_of, neither

# the runtime's API (common.model.runtime), importable here as its callers always have
from tfkfp.components.common.model.runtime import (  # noqa: F401
    BLOCKS,
    FLOAT_BLOCK,
    INT64_BLOCK,
    InputSpec,
    ModelInputError,
    Predictor,
    to_blocks,
)
from tfkfp.components.common.model.savedmodel_runtime import load_savedmodel
from tfkfp.components.common.model.tflite_runtime import load_tflite
from tfkfp.components.common.platform import uris


def load_predictor(model_uri: str, labels_uri: str = "", threads: int = 0) -> Predictor:
    """Load a tfkfp SavedModel directory, a TFLite bundle directory or a ``.tflite`` file.

    Args:
        model_uri: SavedModel directory (with ``saved_model.pb``), a directory holding
            ``model.tflite`` (labels from ``labels.txt`` beside it), or a ``.tflite`` path.
        labels_uri: labels file (one class name per line) for a bare ``.tflite`` path.
        threads: LiteRT interpreter or TensorFlow threads (0: one per CPU of the container).
    """
    if not uris.exists(model_uri):
        raise ModelInputError(f"model {model_uri} does not exist")
    kind = kind_of(model_uri)
    if kind == SAVEDMODEL:
        return load_savedmodel(model_uri, threads)
    if kind == TFLITE:
        return load_tflite(uris.join(model_uri, MODEL_FILE), labels_uri, threads)
    if uris.isdir(model_uri):
        raise ModelInputError(neither(model_uri))
    if model_uri.endswith(".tflite"):
        return load_tflite(model_uri, labels_uri, threads)
    raise ModelInputError(f"model {model_uri} is not a SavedModel directory, a TFLite bundle "
                          "directory or a .tflite file")
