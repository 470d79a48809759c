"""Parsing serialized ``tf.train.Example`` batches in the record layout a schema names.

Every reader of Examples (``make_dataset``, batch prediction, the SavedModel's
``serving_default``, the server's b64 Examples) parses through ``example_parser``, so the
layout is decided here once. In the ``packed`` layout (see ``common.schema``) a batch costs
one ``tf.io.parse_example`` for all its features plus one ``tf.unstack`` per packed group:
no per-column Python work runs per batch, only when the graph is built.

``accept="both"`` also parses Examples with one feature per column when the schema is
packed: the first record of the batch says which layout the batch has (a ``tf.cond``), so a
model trained on packed shards still serves what outside clients send. A batch that mixes
layouts is refused by TensorFlow naming the feature a record lacks.
"""

from typing import Callable, Dict, Sequence

from tfkfp.components.common.schema import Column, PackedGroup, Schema

ACCEPT = ("schema", "both")


def column_spec(columns: Sequence[Column]) -> Dict:
    """``tf.io.parse_example`` features for these columns, one feature per column."""
    import tensorflow as tf

    return {c.name: tf.io.FixedLenFeature(c.shape, tf.dtypes.as_dtype(c.dtype))
            for c in columns}


def _needed_groups(schema: Schema, names: Sequence[str]) -> Dict[str, PackedGroup]:
    return {g.feature: g for g in schema.packed if any(n in names for n in g.columns)}


def packed_spec(schema: Schema, columns: Sequence[Column]) -> Dict:
    """``tf.io.parse_example`` features for these columns in ``schema``'s layout: each packed
    group a column needs as one fixed-length list, every other column as itself."""
    import tensorflow as tf

    names = [c.name for c in columns]
    groups = _needed_groups(schema, names)
    inside = {n for g in groups.values() for n in g.columns}
    spec = column_spec([c for c in columns if c.name not in inside])
    for feature, group in groups.items():
        spec[feature] = tf.io.FixedLenFeature([len(group.columns)],
                                              tf.dtypes.as_dtype(group.dtype))
    return spec


def example_parser(schema: Schema, columns: Sequence[Column], accept: str = "schema"
                   ) -> Callable:
    """``serialized[B] -> {column: tensor[B, *shape]}`` for ``columns`` (undecoded: images
    stay encoded bytes), reading records laid out as ``schema`` says.

    Args:
        schema: the schema of the records (its ``layout`` and ``packed`` groups).
        columns: the columns to return.
        accept: ``schema`` parses the schema's layout only; ``both`` also parses one feature
            per column when the schema is packed (decided per batch by its first record).
    """
    if accept not in ACCEPT:
        raise ValueError(f"accept {accept!r} is not one of {ACCEPT}")
    columns = list(columns)
    groups = _needed_groups(schema, [c.name for c in columns])
    per_column = _parse_fn(column_spec(columns), {}, columns)
    if not groups:
        return per_column
    packed = _parse_fn(packed_spec(schema, columns), groups, columns)
    if accept == "schema":
        return packed
    probe = next(iter(groups.values()))
    return lambda serialized: _either(serialized, probe, packed, per_column)


def _parse_fn(spec: Dict, groups: Dict[str, PackedGroup], columns: Sequence[Column]):
    import tensorflow as tf

    names = [c.name for c in columns]

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        out = {n: parsed[n] for n in names if n in parsed}
        for feature, group in groups.items():
            for name, values in zip(group.columns, tf.unstack(parsed[feature], axis=1)):
                if name in names:
                    out[name] = values
        return {n: out[n] for n in names}

    return parse


def _either(serialized, probe: PackedGroup, packed, per_column):
    """Parse with ``packed`` when the batch's first record has the ``probe`` group's feature."""
    import tensorflow as tf

    spec = {probe.feature: tf.io.VarLenFeature(tf.dtypes.as_dtype(probe.dtype))}
    found = tf.io.parse_example(serialized[:1], spec)[probe.feature]
    has_packed = tf.size(found.values) > 0
    return tf.cond(has_packed, lambda: packed(serialized), lambda: per_column(serialized))
