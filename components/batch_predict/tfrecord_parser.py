"""Parsing TFRecord batches for prediction: the compiled parser of a batch of records
(``make_parser``: feature and key columns, the rows each record holds, the model's blocks of
scalar inputs as one matrix), how many records make a batch of about B rows, and a parsed
batch's ``Chunk``, its bad records found by halving (``parse_chunk``).

``batch_predict.tfrecords`` reads the shards and hands each batch of records here.
"""

from typing import Dict, List, Sequence

import numpy as np

from tfkfp.components.batch_predict.errors import clean_tf_message
from tfkfp.components.batch_predict.records import (
    Chunk,
    ErrorRow,
    concat_columns,
)
from tfkfp.components.common.data.decoding import decode_column
from tfkfp.components.common.data.packing import scalar_of
from tfkfp.components.common.data.parsing import rows_parser
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.model.predictor import BLOCKS
from tfkfp.components.common.platform import fetch_cache
from tfkfp.components.common.platform.halving import split_failures

# a parsed block's name in the graph ('__': no column can have it, common.data.columns)
_BLOCK_NAMES = {dtype: f"block__{dtype}" for dtype in BLOCKS}
_BLOCK_KEYS = {name: BLOCKS[dtype] for dtype, name in _BLOCK_NAMES.items()}


def make_parser(features: List[Column], keys: List[Column], schema: Schema | None = None,
                accept: str = "schema", blocks: Dict[str, Sequence[str]] | None = None):
    """A compiled ``serialized[B] -> (features, keys, rows[B])`` for the feature and key
    columns, in the record layout of ``schema`` (the data's; None: one feature per column),
    with the rows each record holds. The scalar columns ``blocks`` names for a dtype come as
    one ``[rows, n]`` matrix, in that order (a chunk holds it under the Predictor's
    ``BLOCKS[dtype]``), which the model takes as it is: one array to hand over instead of
    one per column, split and stacked again."""
    import tensorflow as tf

    columns = features + [k for k in keys if k.name not in {c.name for c in features}]
    parse_columns = rows_parser(schema or Schema(tuple(columns)), columns, accept)
    blocks = blocks or {}
    _check_blocks(features, blocks)
    stacked = {n for names in blocks.values() for n in names}
    alone = [c for c in features if c.name not in stacked]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def parse(serialized):
        parsed, rows = parse_columns(serialized)
        out = {c.name: decode_column(c, parsed[c.name]) for c in alone}
        out.update((_BLOCK_NAMES[dtype], tf.stack([parsed[n] for n in names], axis=1))
                   for dtype, names in blocks.items())
        return out, {k.name: parsed[k.name] for k in keys}, rows

    return parse


def _check_blocks(features: List[Column], blocks: Dict[str, Sequence[str]]) -> None:
    for dtype, names in blocks.items():
        scalars = {c.name for c in features if scalar_of(c, dtype)}
        if dtype not in _BLOCK_NAMES or not set(names) <= scalars:
            raise ValueError(f"a {dtype} block of {list(names)}: blocks hold scalar "
                             f"{' or '.join(_BLOCK_NAMES)} features being parsed, of its dtype")


def records_per_batch(batch_size: int, schema: Schema | None, first_record_rows: int = 0
                      ) -> int:
    """Records to read for a batch of about ``batch_size`` rows: by the rows the first
    record holds, where it was counted, else by the schema's layout."""
    block = first_record_rows or (schema.block_rows if schema is not None else 0)
    return max(1, -(-batch_size // block)) if block else batch_size


def first_record_rows(files: List[str], compression: str, parse) -> int:
    """The rows the first record of the first non-empty file holds (0: none was read). A
    schema taken from the model says how it was trained, not how these files were written:
    blocks, or a row a record."""
    import tensorflow as tf

    for path in files:
        try:
            with fetch_cache.readable(path) as local:
                for record in tf.data.TFRecordDataset(local, compression_type=compression
                                                      ).take(1):
                    return int(parse(tf.reshape(record, [1]))[2].numpy()[0])
        except tf.errors.OpError:  # unreadable: the read itself reports it, record by record
            return 0
    return 0


def parse_chunk(path: str, parse, serialized, first: int, offsets) -> Chunk:
    """Parse a batch; on failure find the bad records by halving (see split_failures)."""
    count = int(serialized.shape[0])

    def attempt(lo: int, hi: int):
        features, keys, rows = parse(serialized[lo:hi])
        return ({_BLOCK_KEYS.get(n, n): v.numpy() for n, v in features.items()},
                {n: v.numpy() for n, v in keys.items()}, rows.numpy())

    good, bad = split_failures(attempt, count)
    errors = [ErrorRow(path, first + i, int(offsets[i]) if offsets is not None else -1,
                       f"record does not parse with the schema: {clean_tf_message(err)}")
              for i, err in bad]
    return _chunk(good, errors, first)


def _chunk(good, errors: List[ErrorRow], first: int) -> Chunk:
    if not good:
        return Chunk({}, {}, np.zeros(0, np.int64), errors)
    features = concat_columns([g[2][0] for g in good], list(good[0][2][0]))
    keys = concat_columns([g[2][1] for g in good], list(good[0][2][1]))
    records = np.concatenate([np.repeat(np.arange(lo, hi, dtype=np.int64), result[2])
                              for lo, hi, result in good]) + first
    return Chunk(features, keys, records, errors)
