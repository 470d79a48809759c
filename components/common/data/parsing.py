"""Parsing serialized ``tf.train.Example`` batches in the record layout a schema names.

Every reader of Examples (``make_dataset``, batch prediction, the SavedModel's
``serving_default``, the server's b64 Examples) parses through ``example_parser``, so the
layout is decided here once. In the ``packed`` layout (see ``common.data.schema``) a batch costs
one ``tf.io.parse_example`` for all its features plus one ``tf.unstack`` per packed group:
no per-column Python work runs per batch, only when the graph is built.

In the ``blocks`` layout each record holds several rows: every feature is parsed as one
ragged list per record, whose values, one row after another, are reshaped to rows (a
Example of the ``packed`` layout reads as a block of one row). Each record's features must
agree on its row count; a record where they do not is refused naming the feature.

``accept="both"`` also parses Examples with one feature per column when the schema is
packed: the first record of the batch says which layout the batch has (a ``tf.cond``), so a
model trained on packed shards still serves what outside clients send. A batch that mixes
layouts is refused by TensorFlow naming the feature a record lacks.
"""

import math
from typing import Callable, Dict, Sequence

from tfkfp.components.common.data.packing import PackedGroup
from tfkfp.components.common.data.schema import Column, Schema

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
    """``serialized[B] -> {column: tensor[R, *shape]}`` for ``columns`` (undecoded: images
    stay encoded bytes), reading records laid out as ``schema`` says; R is B but in the
    ``blocks`` layout, where it is the rows the B records hold.

    Args:
        schema: the schema of the records (its ``layout`` and ``packed`` groups).
        columns: the columns to return.
        accept: ``schema`` parses the schema's layout only; ``both`` also parses one feature
            per column when the schema is packed (decided per batch by its first record).
    """
    parse = rows_parser(schema, columns, accept)
    return lambda serialized: parse(serialized)[0]


def rows_parser(schema: Schema, columns: Sequence[Column], accept: str = "schema"
                ) -> Callable:
    """As ``example_parser``, but ``serialized[B] -> (columns, rows[B])``: also the rows
    each record holds (all ones but in the ``blocks`` layout)."""
    if accept not in ACCEPT:
        raise ValueError(f"accept {accept!r} is not one of {ACCEPT}")
    columns = list(columns)
    groups = _needed_groups(schema, [c.name for c in columns])
    per_column = _parse_fn(column_spec(columns), {}, columns)
    if schema.record_layout.multi_row:
        laid_out = _blocks_fn(groups, columns)
    elif groups:
        laid_out = _parse_fn(packed_spec(schema, columns), groups, columns)
    else:
        return per_column
    if accept == "schema" or not groups:
        return laid_out
    probe = next(iter(groups.values()))
    return lambda serialized: _either(serialized, probe, laid_out, per_column)


def _parse_fn(spec: Dict, groups: Dict[str, PackedGroup], columns: Sequence[Column]):
    import tensorflow as tf

    names = [c.name for c in columns]

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        out = {n: parsed[n] for n in names if n in parsed}
        _unpack(out, parsed, groups, names)
        return {n: out[n] for n in names}, tf.ones_like(serialized, dtype=tf.int64)

    return parse


def _unpack(out: Dict, parsed: Dict, groups: Dict[str, PackedGroup], names) -> None:
    """Each packed group's ``[rows, n]`` matrix as its columns, in ``out``."""
    import tensorflow as tf

    for feature, group in groups.items():
        for name, values in zip(group.columns, tf.unstack(parsed[feature], axis=1)):
            if name in names:
                out[name] = values


def _blocks_fn(groups: Dict[str, PackedGroup], columns: Sequence[Column]):
    """The ``blocks`` layout's parser: one ragged list per feature and record, reshaped to
    rows after checking that each record's features agree on its row count."""
    import tensorflow as tf

    names = [c.name for c in columns]
    inside = {n for g in groups.values() for n in g.columns}
    shapes = {c.name: (c.dtype, tuple(c.shape)) for c in columns if c.name not in inside}
    shapes.update({f: (g.dtype, (len(g.columns),)) for f, g in groups.items()})
    spec = {f: tf.io.RaggedFeature(tf.dtypes.as_dtype(dtype), row_splits_dtype=tf.int64)
            for f, (dtype, _) in shapes.items()}
    widths = {f: math.prod(shape) for f, (_, shape) in shapes.items()}  # values a row
    counted = [f for f in shapes if widths[f]]

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        rows = parsed[counted[0]].row_lengths() // widths[counted[0]]
        checks = [_check_block(counted[0], widths[counted[0]], f, widths[f],
                               parsed[f].row_lengths(), rows) for f in counted[1:]]
        with tf.control_dependencies(checks):
            total = tf.reduce_sum(rows)
            out = {f: tf.reshape(parsed[f].flat_values, [total, *shape])
                   for f, (_, shape) in shapes.items()}
        _unpack(out, out, groups, names)
        return {n: out[n] for n in names}, rows

    return parse


def _check_block(reference: str, reference_width: int, feature: str, width: int, lengths,
                 rows):
    import tensorflow as tf

    # no single quotes: TensorFlow escapes them in an assertion's message
    return tf.debugging.assert_equal(lengths, rows * width, message=(
        f"a block record whose features disagree on its row count: {feature} holds x "
        f"values where the rows counted from {reference} ({reference_width} value(s) a row) "
        f"need y ({width} a row)"))


def _either(serialized, probe: PackedGroup, packed, per_column):
    """Parse with ``packed`` (or blocks) when the batch's first record has the ``probe``
    group's feature."""
    import tensorflow as tf

    spec = {probe.feature: tf.io.VarLenFeature(tf.dtypes.as_dtype(probe.dtype))}
    found = tf.io.parse_example(serialized[:1], spec)[probe.feature]
    has_packed = tf.size(found.values) > 0
    return tf.cond(has_packed, lambda: packed(serialized), lambda: per_column(serialized))
