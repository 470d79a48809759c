"""A tfkfp SavedModel as a ``Predictor`` (common.model.predictor loads it): its
``serving_raw`` signature, with the scalar columns of one dtype fed as one packed matrix."""

from typing import Callable, Dict, Tuple

import numpy as np

from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.model.bundle import SAVEDMODEL
from tfkfp.components.common.model.runtime import (
    BLOCKS,
    InputSpec,
    ModelInputError,
    Predictor,
    aliases_of,
    column_of,
    to_blocks,
)
from tfkfp.components.common.platform import fetch_cache
from tfkfp.components.common.platform.cpus import tensorflow_threads


def load_savedmodel(model_dir: str, threads: int) -> Predictor:
    import tensorflow as tf

    tensorflow_threads(threads)
    with fetch_cache.readable_tree(model_dir) as local:  # s3://: loaded from a local copy
        loaded = tf.saved_model.load(local)
    signatures = sorted(loaded.signatures.keys())
    if savedmodel.SIGNATURE_RAW not in signatures:
        raise ModelInputError(
            f"SavedModel {model_dir} has signatures {signatures}; batch_predict needs the "
            f"tfkfp {savedmodel.SIGNATURE_RAW!r} signature (one input per feature column), as "
            "written by common.model.savedmodel.export_model")
    fn = loaded.signatures[savedmodel.SIGNATURE_RAW]
    schema = savedmodel.load_schema(model_dir)
    tensors = {c.name: c.tensor for c in schema.features}
    # the signature's inputs, keyed by the column each takes
    specs = {column_of(schema, t): spec for t, spec in fn.structured_input_signature[1].items()}
    inputs = {name: InputSpec(spec.dtype.name if spec.dtype != tf.string else "string",
                              tuple(spec.shape[1:].as_list())) for name, spec in specs.items()}
    # the task train recorded; a model without tfkfp_model.json's "task": its output names
    task = savedmodel.recorded_task(model_dir) or savedmodel.task_of_outputs(
        fn.structured_outputs)
    output = "value" if task == "regression" else "probabilities"

    def call(columns: Dict) -> Dict:
        return fn(**{tensors.get(name, name): value for name, value in columns.items()})

    def per_column(features: Dict[str, np.ndarray]) -> np.ndarray:
        return call({name: tf.constant(features[name]) for name in inputs})[output].numpy()

    blocks = {}
    for dtype in BLOCKS:  # scalar columns of one dtype, two or more: one matrix each
        names = [n for n, s in specs.items() if s.dtype.name == dtype and s.shape.rank == 1]
        if len(names) >= 2:
            blocks[dtype] = tuple(names)
    predict = _packed_call(call, specs, blocks, per_column, output) if blocks else per_column
    labels = savedmodel.load_labels(model_dir) if task == "classification" else []
    return Predictor(SAVEDMODEL, model_dir, inputs, labels, predict, schema, handle=loaded,
                     task=task, blocks=blocks, aliases=aliases_of(tensors))


def _packed_call(fn: Callable, specs: Dict, blocks: Dict[str, Tuple[str, ...]],
                 per_column: Callable, output: str = "probabilities") -> Callable:
    """``predict`` (the signature's ``output``) with one Python-to-TensorFlow crossing per
    block of scalar columns of one dtype, given one by one or as the ``BLOCKS[dtype]``
    matrix.

    ``fn`` calls the signature on a dict of tensors keyed as ``specs`` (by column).
    Calling the signature costs a fixed amount of Python per input (most of a small batch's
    time for a wide table), so the scalar float32 columns, and the scalar int64 ones, go in
    as one ``[rows, n]`` matrix each, split back into columns inside a tf.function that
    calls the signature; the other inputs are passed as they are. The model computes exactly
    what it computes on the columns. Features a matrix cannot take as they are (another
    dtype or shape, ragged rows) go through ``per_column``, the signature called one input
    per column, as before.
    """
    import tensorflow as tf

    grouped = {n for names in blocks.values() for n in names}
    others = [n for n in specs if n not in grouped]

    # '__' keeps the matrices' names apart from every input's (common.data.schema)
    @tf.function(input_signature=[tf.TensorSpec([None, len(names)], tf.as_dtype(dtype),
                                                name=f"packed__{dtype}")
                                  for dtype, names in blocks.items()]
                 + [specs[n] for n in others])
    def call(*tensors):
        columns = {}
        for matrix, names in zip(tensors, blocks.values()):
            columns.update(zip(names, tf.unstack(matrix, num=len(names), axis=1)))
        columns.update(zip(others, tensors[len(blocks):]))
        return fn(columns)[output]

    concrete = call.get_concrete_function()

    def predict(features: Dict[str, np.ndarray]) -> np.ndarray:
        packed = to_blocks(features, blocks)
        if packed is None:  # the per-column call takes them, or names what does not fit
            return per_column(features)
        return concrete(*[tf.constant(packed[BLOCKS[d]]) for d in blocks],
                        *[tf.constant(packed[n]) for n in others]).numpy()

    return predict
