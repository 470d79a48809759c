"""The SavedModel contract shared by train, freeze_quantize, export_tflite and batch_predict.

A tfkfp SavedModel has two serving signatures over the same classifier or regressor:

- ``serving_default``: input ``examples``, a batch of serialized ``tf.train.Example`` strings
  with one feature per column (what outside clients send) or in the ``packed`` layout that
  shard_tfrecords writes for the model's feature columns (each batch in the layout of its
  first record), for batch prediction straight from TFRecords;
- ``serving_raw``: one input per feature column, named by the column's tensor name (its own
  name when that is a plain identifier, see common.data.schema) and shaped as in the schema (images
  already decoded to float32 in [0, 1]), for apps and for TFLite conversion.

A classifier's signatures return ``probabilities`` (float32 [batch, classes]), ``class_ids``
(int64 [batch]) and ``classes`` (string [batch], the label vocabulary entry); a regressor's
return ``value`` (float32 [batch], in the label's units). The schema (``schema.json``) and a
classifier's label vocabulary (``labels.txt``, one per line) are assets of the model;
``tfkfp_model.json`` says which task it is and which column each ``serving_raw`` input
takes (``input_columns``).
"""

import json
import os
import tempfile
from typing import Any, Dict, List

from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.model import task_kinds
from tfkfp.components.common.platform import uris

SIGNATURE_EXAMPLES = "serving_default"
SIGNATURE_RAW = "serving_raw"
EXAMPLES_INPUT = "examples"
OUTPUTS = task_kinds.kind("classification").outputs
REGRESSION_OUTPUTS = task_kinds.kind("regression").outputs
TASKS = task_kinds.names()  # common.model.task_kinds' table
LABELS_FILE = "labels.txt"
SCHEMA_FILE = "schema.json"
METADATA_FILE = "tfkfp_model.json"
SAVEDMODEL_FILE = "saved_model.pb"  # what makes a folder a SavedModel (common.model.bundle)
WEIGHTS_PREFIX = "weights/model"


def export_model(model, schema: Schema, export_dir: str, metadata: Dict[str, Any] | None = None,
                 task: str = "classification") -> str:
    """Save a Keras classifier or regressor over ``schema``'s features as a tfkfp SavedModel.

    A classifier maps a dict of feature tensors to class probabilities (``[batch, classes]``,
    e.g. from a final softmax); a regressor to its value (``[batch, 1]`` or ``[batch]``). The
    directory is written under a staging name and renamed into place, so a reader never sees
    half a model.
    """
    import tensorflow as tf

    if task not in task_kinds.TASK_KINDS:
        raise ValueError(f"task {task!r} is not one of {', '.join(task_kinds.names())}")
    labels = label_names(schema) if task_kinds.kind(task).classes else []
    with uris.replaced_dir(export_dir) as staging, tempfile.TemporaryDirectory() as tmp:
        module = _serving_module(model, schema, labels, tmp)
        tf.saved_model.save(module, staging, signatures={
            SIGNATURE_EXAMPLES: module.from_examples, SIGNATURE_RAW: module.from_features})
        model.save_weights(uris.join(staging, WEIGHTS_PREFIX))
        body = {"task": task, "labels": labels, "signatures": [SIGNATURE_EXAMPLES, SIGNATURE_RAW],
                "input_columns": input_columns(schema), **(metadata or {})}
        uris.write_text_atomic(uris.join(staging, METADATA_FILE),
                               json.dumps(body, indent=2) + "\n")
    return export_dir


def input_columns(schema: Schema) -> Dict[str, str]:
    """{serving_raw input: the column it takes}, as published in tfkfp_model.json."""
    return {c.tensor: c.name for c in schema.features}


def label_names(schema: Schema) -> List[str]:
    label = schema.label
    if label is None or not label.vocabulary:
        raise SchemaError("a tfkfp classifier needs a label column with a vocabulary (class "
                          f"names); the schema's label is {label.name if label else None!r}")
    return [str(v) for v in label.vocabulary]


def _serving_module(model, schema: Schema, labels: List[str], tmp: str):
    import tensorflow as tf

    from tfkfp.components.common.data.decoding import decode_column
    from tfkfp.components.common.data.parsing import example_parser

    features = schema.features
    # per-column Examples, or packed ones as shard_tfrecords packs these features (whatever
    # layout the model was trained on)
    parse = example_parser(schema.with_layout("packed"), features, accept="both")
    schema_path = os.path.join(tmp, SCHEMA_FILE)
    with open(schema_path, "w") as f:
        f.write(schema.to_json())

    module = tf.Module()
    # Track the model's variables and lookup tables, not the Keras model itself: saving a
    # Keras object graph traces every layer again (most of the export time for wide tables).
    module.model_variables = list(model.variables)
    module.model_tables = _lookup_tables(model)
    module.schema_asset = tf.saved_model.Asset(schema_path)
    if labels:  # a classifier
        labels_path = os.path.join(tmp, LABELS_FILE)
        with open(labels_path, "w") as f:
            f.write("\n".join(labels) + "\n")
        module.labels_asset = tf.saved_model.Asset(labels_path)
        module.class_names = tf.constant(labels)

    def outputs(inputs):
        scores = tf.cast(model(inputs, training=False), tf.float32)
        if not labels:
            return {"value": tf.reshape(scores, [-1])}
        ids = tf.argmax(scores, axis=-1)
        return {"probabilities": scores, "class_ids": ids,
                "classes": tf.gather(module.class_names, ids)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=EXAMPLES_INPUT)])
    def from_examples(examples):
        parsed = parse(examples)
        return outputs({c.name: decode_column(c, parsed[c.name]) for c in features})

    raw_spec = {c.tensor: tf.TensorSpec([None, *raw_shape(c)], raw_dtype(c), name=c.tensor)
                for c in features}

    @tf.function(input_signature=[raw_spec])
    def from_features(inputs):
        return outputs({c.name: inputs[c.tensor] for c in features})

    module.from_examples = from_examples
    module.from_features = from_features.get_concrete_function()
    return module


def _lookup_tables(model) -> list:
    tables = []
    for layer in model.submodules:
        table = getattr(layer, "lookup_table", None)
        if table is not None and table not in tables:
            tables.append(table)
    return tables


def raw_shape(column) -> List[int]:
    """The per-example shape a feature has after decoding (images decoded to HWC)."""
    return list(column.image_shape) if column.encoding == "image" else list(column.shape)


def raw_dtype(column):
    import tensorflow as tf

    if column.encoding == "image":
        return tf.float32
    return {"float32": tf.float32, "int64": tf.int64, "string": tf.string}[column.dtype]


def is_savedmodel(path: str) -> bool:
    return uris.exists(uris.join(path, SAVEDMODEL_FILE))


def load_schema(model_dir: str) -> Schema:
    """The schema a tfkfp SavedModel was trained on (from its assets)."""
    return Schema.load(uris.join(model_dir, "assets", SCHEMA_FILE))


def load_labels(model_dir: str) -> List[str]:
    """A classifier's class names; none for a regressor."""
    path = uris.join(model_dir, "assets", LABELS_FILE)
    if not task_kinds.kind(model_task(model_dir)).classes and not uris.exists(path):
        return []
    return [line for line in uris.read_text(path).splitlines() if line]


def model_task(model_dir: str) -> str:
    """classification or regression, as train recorded it (earlier models: classifiers)."""
    return recorded_task(model_dir) or task_kinds.DEFAULT_TASK


def recorded_task(model_dir: str) -> str | None:
    """The task train recorded in tfkfp_model.json; None for a model that does not say."""
    task = load_metadata(model_dir).get("task")
    return task if task in task_kinds.TASK_KINDS else None


def task_of_outputs(outputs) -> str:
    """The task a model's output names suggest: regression when they are exactly a
    regressor's, else classification. Only for an artifact that does not record its task
    (tfkfp_model.json's or a TFLite bundle's signature.json "task"): the recorded task is
    resolved once, at train's boundary, and read back everywhere else."""
    return task_kinds.of_outputs(outputs)


def load_metadata(model_dir: str) -> Dict[str, Any]:
    path = uris.join(model_dir, METADATA_FILE)
    return json.loads(uris.read_text(path)) if uris.exists(path) else {}
