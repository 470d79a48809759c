"""From a batch of serialized Examples to what a model takes: the ``tf.io.parse_example``
spec, the parser of ``(features, label)`` or ``(features, keys)`` with the label as class
indices, and images decoded and resized (``decode_column``).

The record layout itself is unpacked by ``common.data.parsing``; ``common.data.reader`` maps
this parser over its batches, and the SavedModel, serve and batch_predict decode images here.
"""

from typing import Dict, List

from tfkfp.components.common.data import parsing
from tfkfp.components.common.data.schema import Column, Schema


def feature_spec(schema: Schema | None, columns: List[Column]) -> Dict:
    """``tf.io.parse_example`` features for ``columns`` in ``schema``'s record layout (one
    feature per column without a schema); ``common.data.parsing.example_parser`` also unpacks."""
    if schema is None:
        return parsing.column_spec(columns)
    return parsing.packed_spec(schema, columns)

def parser(schema: Schema, mode: str):
    label = schema.label
    inputs = schema.features
    others = schema.keys if mode == "predict" else ([label] if label else [])
    parse_columns = parsing.example_parser(schema, inputs + others)
    lookup = _label_lookup(label) if label is not None and mode != "predict" else None

    def parse(serialized):
        parsed = parse_columns(serialized)
        features = {c.name: decode_column(c, parsed[c.name]) for c in inputs}
        if mode == "predict":
            return features, {c.name: parsed[c.name] for c in schema.keys}
        target = parsed[label.name]
        if lookup is not None:
            target = lookup.lookup(target)
        return features, target

    return parse


def _label_lookup(label: Column):
    import tensorflow as tf

    if not label.vocabulary:
        return None
    key_dtype = tf.string if label.dtype == "string" else tf.int64
    keys = tf.constant(list(label.vocabulary), dtype=key_dtype)
    values = tf.range(len(label.vocabulary), dtype=tf.int64)
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), -1)


def decode_column(col: Column, values):
    import tensorflow as tf

    if col.encoding != "image":
        return values
    height, width, channels = col.image_shape

    def one(blob):
        image = tf.io.decode_image(blob, channels=channels, expand_animations=False)
        image = tf.image.convert_image_dtype(image, tf.float32)
        return tf.image.resize(image, (height, width))

    return tf.map_fn(one, values, fn_output_signature=tf.TensorSpec(
        (height, width, channels), tf.float32))
