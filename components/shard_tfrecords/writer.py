"""Phase two of sharding: cut each split's spooled records into TFRecord shards.

Shards hold equal record counts, contiguous in input order, and are written by a thread
pool (``TFRecordWriter.write`` releases the GIL, so GZIP compresses in parallel). Each
shard's CRC32C (the checksum GCS reports for objects) goes into the manifest.
"""

import concurrent.futures
import dataclasses
import os
from typing import Callable, Dict, List

import numpy as np

from tfkfp.components.common import uris
from tfkfp.components.common.dataset import tf_compression
from tfkfp.components.shard_tfrecords.worker import spool_path


@dataclasses.dataclass(frozen=True)
class ShardInfo:
    file: str  # relative to the dataset directory
    records: int
    bytes: int
    crc32c: str

    def to_dict(self) -> Dict:
        return dataclasses.asdict(self)


def shard_name(split: str, index: int, count: int, compression: str) -> str:
    suffix = ".tfrecord.gz" if compression == "gzip" else ".tfrecord"
    return f"{split}/data-{index:05d}-of-{count:05d}{suffix}"


def shard_count(records: int, total_bytes: int, shard_bytes: int, num_shards: int,
                min_shards: int) -> int:
    if num_shards > 0:
        return num_shards
    return max(min_shards, -(-total_bytes // max(shard_bytes, 1)))


class SplitSpool:
    """The spooled records of one split: chunk files in order, with every record's size."""

    def __init__(self, spool_dir: str, split: str, chunks: List[int],
                 lengths: List[np.ndarray]):
        self.files = [spool_path(spool_dir, i, split) for i in chunks]
        self.lengths = lengths
        self.chunk_starts = np.cumsum([0] + [len(x) for x in lengths])
        self.count = int(self.chunk_starts[-1])
        self.bytes = int(sum(int(x.sum()) for x in lengths))

    def records(self, start: int, stop: int):
        """Yield records start..stop-1 (global indices within the split) as bytes."""
        for c, path in enumerate(self.files):
            lo, hi = max(start, self.chunk_starts[c]), min(stop, self.chunk_starts[c + 1])
            if lo >= hi:
                continue
            sizes = self.lengths[c]
            offsets = np.concatenate([[0], np.cumsum(sizes)])
            first, last = lo - self.chunk_starts[c], hi - self.chunk_starts[c]
            with open(path, "rb") as f:
                f.seek(int(offsets[first]))
                blob = f.read(int(offsets[last] - offsets[first]))
            cuts = (offsets[first:last + 1] - offsets[first]).tolist()
            for a, b in zip(cuts, cuts[1:]):
                yield blob[a:b]


def write_split(spool: SplitSpool, split: str, count: int, out_dir: str, compression: str,
                on_records: Callable[[int], None], threads: int) -> List[ShardInfo]:
    bounds = np.linspace(0, spool.count, count + 1).round().astype(np.int64)
    jobs = [(shard_name(split, k, count, compression), int(bounds[k]), int(bounds[k + 1]))
            for k in range(count)]
    uris.makedirs(uris.join(out_dir, split))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(threads, 1)) as pool:
        futures = [pool.submit(_write_shard, spool, out_dir, name, a, b, compression, on_records)
                   for name, a, b in jobs]
        return [f.result() for f in futures]


def _write_shard(spool: SplitSpool, out_dir: str, name: str, start: int, stop: int,
                 compression: str, on_records: Callable[[int], None]) -> ShardInfo:
    import tensorflow as tf

    path = uris.join(out_dir, name)
    options = tf.io.TFRecordOptions(compression_type=tf_compression(compression))
    with tf.io.TFRecordWriter(path, options) as writer:
        done = 0
        for record in spool.records(start, stop):
            writer.write(record)
            done += 1
            if done % 4096 == 0:
                on_records(4096)
        on_records(done % 4096)
    size, crc = _checksum(path)
    return ShardInfo(name, stop - start, size, crc)


def _checksum(path: str):
    import google_crc32c

    crc = google_crc32c.Checksum()
    size = 0
    with uris.open_file(path) as f:
        while block := f.read(8 << 20):
            crc.update(block)
            size += len(block)
    return size, crc.hexdigest().decode()


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
