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

Parsing a batch of records, and finding its bad records, is ``batch_predict.tfrecord_parser``.
"""

import re
from typing import Iterator, List, Sequence, Tuple

import numpy as np

from tfkfp.components.batch_predict.errors import PredictInputError, clean_tf_message
from tfkfp.components.batch_predict.records import Chunk, ErrorRow
from tfkfp.components.batch_predict.tfrecord_parser import parse_chunk
from tfkfp.components.common.data.record_stream import RecordStreamError, read_records
from tfkfp.components.common.platform import fetch_cache, uris
from tfkfp.components.common.platform.progress import log

_AT = re.compile(r"record at (\d+)")
# records holding this many rows or more are framed in Python: a few a batch
FRAMED_ROWS = 64
_FRAME = 16  # length (8) + length CRC (4) + data CRC (4) around every TFRecord


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
