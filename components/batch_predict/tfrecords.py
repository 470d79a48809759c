"""Reading one TFRecord shard for prediction, record-exact even when the shard is bad.

The fast path is the shared reader's pattern: ``TFRecordDataset(file).batch(B)`` with a
large read buffer and prefetch, and one ``tf.io.parse_example`` per batch. Two things can
go wrong, and neither aborts the run:

- a batch does not parse (a record that is not an Example, or does not match the schema):
  the batch is split down to its bad records (``common.platform.halving``), which go to
  the errors file with TensorFlow's reason;
- the file itself is corrupt or truncated: reading stops with a DataLossError. The records
  of the batch in progress are read again one by one up to the failure, and the shard is
  reported with its file name, the record index and the byte offset where reading failed.

In the ``blocks`` layout a record holds several rows: batches group as many records as hold
about B rows, a row's ``record`` is its block's index in the file, and a block that does
not parse is one error naming that block.

A shard listed in a manifest yields as many inputs as the manifest lists: each listed record
it did not yield (cut on a record boundary, or unread after a corruption) is an error row
naming the shard and both counts (``missing_records``).

A task's shards are read without starting a tf.data pipeline per shard (``read_shards``):
a start costs some 10-15 ms of Python (tracing, iterator setup), as much as reading and
parsing a 12,000-row shard of blocks, and holds the first batch back.

- Local, uncompressed shards of records holding ``FRAMED_ROWS`` rows or more (blocks) are
  framed here (``common.data.record_stream``: TensorFlow's framing and CRC32C checks), a
  few records a batch; at the first broken frame TensorFlow's reader takes over from that
  record, so a corrupt shard is reported as the tf.data path reports it.
- Other local shards, and ``gs://`` shards (TensorFlow reads them where they are), go
  through one pipeline for all of them. Its batches never span two shards and carry their
  shard's position. After a read error the shard it broke in (the one being read, or one
  after it) is found by reading on one shard at a time, and the pipeline starts again
  after it.
- Object-store shards (``s3://``, ``minio://``) are fetched one at a time
  (``fetch_cache``), each read on its own.
"""

import re
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

from tfkfp.components.batch_predict.errors import PredictInputError, clean_tf_message
from tfkfp.components.batch_predict.records import (
    Chunk,
    ErrorRow,
    concat_columns,
)
from tfkfp.components.common.data.parsing import rows_parser
from tfkfp.components.common.data.reader import decode_column
from tfkfp.components.common.data.record_stream import RecordStreamError, read_records
from tfkfp.components.common.data.schema import Column, Schema, scalar_of
from tfkfp.components.common.model.predictor import BLOCKS
from tfkfp.components.common.platform import fetch_cache, uris
from tfkfp.components.common.platform.halving import split_failures
from tfkfp.components.common.platform.progress import log

_AT = re.compile(r"record at (\d+)")
# records holding this many rows or more are framed in Python: a few a batch
FRAMED_ROWS = 64
# a parsed block's name in the graph ('__': no column can have it, common.data.schema)
_BLOCK_NAMES = {dtype: f"block__{dtype}" for dtype in BLOCKS}
_BLOCK_KEYS = {name: BLOCKS[dtype] for dtype, name in _BLOCK_NAMES.items()}
_FRAME = 16  # length (8) + length CRC (4) + data CRC (4) around every TFRecord


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


def read_shards(paths: Sequence[str], compression: str, parse, batch_size: int,
                rows_per_record: int = 1) -> Iterator[Tuple[int, Chunk | None]]:
    """``(position, chunk)`` for each parsed chunk of each shard in ``paths``, in order, and
    ``(position, None)`` once a shard is done (see the module docstring); ``batch_size``
    records a chunk, each holding about ``rows_per_record`` rows."""
    local = not any(uris.is_remote(path) for path in paths)
    if local and not compression and rows_per_record >= FRAMED_ROWS:
        yield from _each_shard(paths, lambda path: _read_framed(path, parse, batch_size))
    elif local or all(uris.tf_reads(path) for path in paths):  # gs://: TensorFlow reads it
        start = 0
        while start < len(paths):
            start = yield from _read_from(paths, start, compression, parse, batch_size)
    else:  # an object-store shard (s3://, minio://): each fetched, then read
        yield from _each_shard(paths, lambda path: read_tfrecords(path, compression, parse,
                                                                  batch_size))


def _each_shard(paths: Sequence[str], read) -> Iterator[Tuple[int, Chunk | None]]:
    for position, path in enumerate(paths):
        yield from ((position, chunk) for chunk in read(path))
        yield position, None


def _read_framed(path: str, parse, batch_size: int) -> Iterator[Chunk]:
    """Parsed chunks of a local, uncompressed shard framed here; from a broken frame on, the
    records as TensorFlow's reader reads them, and where it fails."""
    import tensorflow as tf

    done, offset = 0, 0
    records = _file_records(path)
    while True:
        batch, broken = _take(records, batch_size)
        if batch:
            chunk, done, offset = _parsed(path, parse, tf.constant(batch), done, offset, "")
            yield chunk
        if broken:
            yield from _after_corruption(path, "", parse, done, offset, None, path)
            return
        if len(batch) < batch_size:
            return


def _file_records(path: str) -> Iterator[bytes]:
    with open(uris.local_path(path), "rb") as stream:
        yield from read_records(stream, path)


def _take(records: Iterator[bytes], count: int) -> Tuple[List[bytes], bool]:
    """Up to ``count`` records, and whether a broken frame stopped them, or the file (gone
    since it was listed: TensorFlow's reader then says so, as it did)."""
    batch: List[bytes] = []
    try:
        for record in records:
            batch.append(record)
            if len(batch) == count:
                break
    except (RecordStreamError, OSError):
        return batch, True
    return batch, False


def _read_from(paths: Sequence[str], start: int, compression: str, parse, batch_size: int):
    """Read ``paths[start:]`` through one pipeline, up to the end or the first read error;
    returns the position to read on from."""
    import tensorflow as tf

    def batches(position, path):
        records = tf.data.TFRecordDataset(path, compression_type=compression,
                                          buffer_size=1 << 20)
        return records.batch(batch_size).map(lambda serialized: (position, serialized))

    positions = tf.range(start, len(paths), dtype=tf.int64)
    shards = tf.data.Dataset.from_tensor_slices((positions, list(paths[start:])))
    pipeline = iter(shards.flat_map(batches).prefetch(2))
    current, done, offset = start, 0, 0
    while True:
        try:
            position, serialized = next(pipeline)
        except StopIteration:
            yield from ((p, None) for p in range(current, len(paths)))
            return len(paths)
        except tf.errors.OpError:  # in this shard after ``done``, or in one after it
            path = paths[current]
            yield from ((current, chunk) for chunk in
                        _after_corruption(path, compression, parse, done, offset, None, path))
            yield current, None
            return current + 1
        if int(position) != current:  # the shards before it are done (or were empty)
            yield from ((p, None) for p in range(current, int(position)))
            current, done, offset = int(position), 0, 0
        chunk, done, offset = _parsed(paths[current], parse, serialized, done, offset,
                                      compression)
        yield current, chunk


def _parsed(path: str, parse, serialized, done: int, offset: int, compression: str):
    """The batch's chunk, and the records and bytes of the shard read after it."""
    lengths = _lengths(serialized)
    offsets = offset + np.concatenate([[0], np.cumsum(lengths + _FRAME)[:-1]])
    chunk = parse_chunk(path, parse, serialized, done, offsets if not compression else None)
    return chunk, done + len(lengths), offset + int(lengths.sum()) + _FRAME * len(lengths)


def _lengths(serialized) -> np.ndarray:
    import tensorflow as tf

    return tf.strings.length(serialized).numpy().astype(np.int64)


def read_tfrecords(path: str, compression: str, parse, batch_size: int) -> Iterator[Chunk]:
    """Parsed chunks of one shard, ``batch_size`` records each, then (if it is corrupt) one
    chunk naming where it broke."""
    with fetch_cache.readable(path) as local:  # an object-store shard is fetched first
        yield from _read_local(path, local, compression, parse, batch_size)


def _read_local(path: str, local: str, compression: str, parse, batch_size: int
                ) -> Iterator[Chunk]:
    import tensorflow as tf

    raw = tf.data.TFRecordDataset(local, compression_type=compression, buffer_size=1 << 20)
    batches = iter(raw.batch(batch_size).prefetch(2))
    done, offset = 0, 0
    while True:
        try:
            serialized = next(batches)
        except StopIteration:
            return
        except tf.errors.OpError as err:
            yield from _after_corruption(local, compression, parse, done, offset, err, path)
            return
        chunk, done, offset = _parsed(path, parse, serialized, done, offset, compression)
        yield chunk


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


def _after_corruption(local: str, compression: str, parse, done: int, offset: int,
                      err, path: str) -> Iterator[Chunk]:
    """Re-read the records after ``done`` one at a time up to the failure; report it
    (naming ``path``, the shard as the user knows it, read at ``local``). With ``err``
    None the failure may lie in a later shard: a shard read to its end is not reported."""
    import tensorflow as tf

    tail: List[bytes] = []
    failure = err
    try:
        for record in tf.data.TFRecordDataset(local, compression_type=compression).skip(done):
            tail.append(record.numpy())
    except tf.errors.OpError as again:
        failure = again
    lengths = np.array([len(r) for r in tail], dtype=np.int64)
    offsets = offset + np.concatenate([[0], np.cumsum(lengths + _FRAME)]).astype(np.int64)
    if tail:
        yield parse_chunk(path, parse, tf.constant(tail), done,
                          offsets[:-1] if not compression else None)
    if failure is None:
        return
    message = clean_tf_message(failure)
    found = _AT.search(message)
    at = int(found.group(1)) if found else (int(offsets[-1]) if not compression else -1)
    where = f"byte offset {at}" if at >= 0 else "an unknown offset"
    where += " of the decompressed stream" if compression and at >= 0 else ""
    yield Chunk({}, {}, np.zeros(0, np.int64), [ErrorRow(
        path, done + len(tail), at,
        f"corrupt TFRecord shard {path}: reading failed at record {done + len(tail)}, "
        f"{where} ({message}); the rest of the shard was not read")])


def missing_records(path: str, expected: int | None, found: int) -> List[ErrorRow]:
    """An error row for each record the manifest lists (``expected``) that the shard did not
    yield; a shard yielding more than its manifest lists is refused, named."""
    if expected is None or found == expected:
        return []
    if found > expected:
        raise PredictInputError(f"shard {path} yielded {found} records but its manifest lists "
                                f"{expected}; the shard or manifest.json was changed after "
                                "sharding: shard the data again")
    reason = (f"record not in shard {path}: its manifest lists {expected} records, the shard "
              f"yielded {found}")
    log.warning("%s: %d listed record(s) were not there (expected %d records, found %d)",
                path, expected - found, expected, found)
    return [ErrorRow(path, i, -1, reason) for i in range(found, expected)]
