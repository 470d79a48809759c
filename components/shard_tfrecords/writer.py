"""Phase two of sharding: cut each split's spooled records into TFRecord shards.

Shards hold equal record counts, contiguous in input order, and are written by a thread
pool (``TFRecordWriter.write`` releases the GIL, so GZIP compresses in parallel). Each
shard's CRC32C (the checksum GCS reports for objects) goes into the manifest.
"""

import concurrent.futures
import dataclasses
import threading
from typing import Callable, Dict, List, TextIO

import numpy as np

from tfkfp.components.common.data.dataset import SPLITS, tf_compression
from tfkfp.components.common.platform import scratch, uris
from tfkfp.components.common.platform.cpus import threads_or_cpus
from tfkfp.components.common.platform.progress import Progress
from tfkfp.components.shard_tfrecords.options import ShardOptions
from tfkfp.components.shard_tfrecords.worker import ChunkResult, spool_path


@dataclasses.dataclass(frozen=True)
class ShardInfo:
    file: str  # relative to the dataset directory
    records: int  # rows (examples)
    bytes: int
    crc32c: str
    blocks: int | None = None  # TFRecord records, in the blocks layout (several rows each)

    def to_dict(self) -> Dict:
        out = dataclasses.asdict(self)
        if self.blocks is None:
            del out["blocks"]
        return out


def shard_name(split: str, index: int, count: int, compression: str,
               generation: int = 0) -> str:
    """``train/data-00000-of-00004.tfrecord``; from generation 1 on (a Dataset rewritten in
    place) ``train/data-00000-of-00004-g1.tfrecord``, never a name the old manifest lists."""
    suffix = ".tfrecord.gz" if compression == "gzip" else ".tfrecord"
    tag = f"-g{generation}" if generation else ""
    return f"{split}/data-{index:05d}-of-{count:05d}{tag}{suffix}"


def shard_count(records: int, total_bytes: int, shard_bytes: int, num_shards: int,
                min_shards: int) -> int:
    if num_shards > 0:
        return num_shards
    return max(min_shards, -(-total_bytes // max(shard_bytes, 1)))


class SplitSpool:
    """The spooled records of one split: chunk files in order, with every record's size."""

    def __init__(self, spool_dir: str, split: str, chunks: List[int],
                 lengths: List[np.ndarray], rows: List[np.ndarray], blocks: bool = False):
        self.files = [spool_path(spool_dir, i, split) for i in chunks]
        self.lengths = lengths
        self.chunk_starts = np.cumsum([0] + [len(x) for x in lengths])
        self.count = int(self.chunk_starts[-1])
        self.bytes = int(sum(int(x.sum()) for x in lengths))
        self.blocks = blocks  # whether records are blocks of rows
        # rows before each record, and in all: a shard's row count without reading it
        self.row_starts = np.concatenate([[0], np.cumsum(np.concatenate(rows or [[]]))]
                                         ).astype(np.int64)

    def rows(self, start: int, stop: int) -> int:
        return int(self.row_starts[stop] - self.row_starts[start])

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


def write_shards(results: List[ChunkResult], spool_dir: str, out_dir: str,
                 options: ShardOptions, stream: TextIO | None, generation: int = 0
                 ) -> Dict[str, List[ShardInfo]]:
    """Every split's shards from the spooled chunk results, written under out_dir, sized
    and compressed as ``options`` say."""
    import tensorflow  # noqa: F401 - imported here so its start-up is not billed as writing

    blocks = any(r.rows is not None for r in results)
    spools = {s: SplitSpool(spool_dir, s, [r.index for r in results],
                            [r.lengths[s] for r in results],
                            [r.record_rows(s) for r in results], blocks) for s in SPLITS}
    progress = Progress("writing shards", total=sum(s.rows(0, s.count) for s in spools.values()),
                        stream=stream)  # in rows, as the manifest counts: a block holds many
    lock = threading.Lock()

    def on_records(n: int) -> None:
        with lock:
            progress.update(n)

    shards = {}
    for split, spool in spools.items():
        count = shard_count(spool.count, spool.bytes, int(options.shard_size_mb * (1 << 20)),
                            options.num_shards, options.min_shards)
        shards[split] = write_split(spool, split, count, out_dir, options.compression,
                                    on_records, threads_or_cpus(options.threads), generation)
        scratch.pause_point("writing")
    progress.finish()
    return shards


def write_split(spool: SplitSpool, split: str, count: int, out_dir: str, compression: str,
                on_records: Callable[[int], None], threads: int,
                generation: int = 0) -> List[ShardInfo]:
    bounds = np.linspace(0, spool.count, count + 1).round().astype(np.int64)
    jobs = [(shard_name(split, k, count, compression, generation), int(bounds[k]),
             int(bounds[k + 1])) for k in range(count)]
    uris.makedirs(uris.join(out_dir, split))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(threads, 1)) as pool:
        futures = [pool.submit(_write_shard, spool, out_dir, name, a, b, compression, on_records)
                   for name, a, b in jobs]
        try:
            return [f.result() for f in futures]
        except BaseException:  # a failure or SIGTERM: don't write the shards still queued
            for future in futures:
                future.cancel()
            raise


def _write_shard(spool: SplitSpool, out_dir: str, name: str, start: int, stop: int,
                 compression: str, on_records: Callable[[int], None]) -> ShardInfo:
    import tensorflow as tf

    path = uris.join(out_dir, name)
    options = tf.io.TFRecordOptions(compression_type=tf_compression(compression))
    with uris.tf_writable(path) as target:  # an S3 shard is written here, then uploaded
        with tf.io.TFRecordWriter(target, options) as writer:
            done = reported = start
            for record in spool.records(start, stop):
                writer.write(record)
                done += 1
                if done - reported == 4096:
                    on_records(spool.rows(reported, done))
                    reported = done
            on_records(spool.rows(reported, done))
        size, crc = _checksum(target)
    return ShardInfo(name, spool.rows(start, stop), size, crc,
                     stop - start if spool.blocks else None)


def _checksum(path: str):
    import google_crc32c

    crc = google_crc32c.Checksum()
    size = 0
    with uris.open_file(path) as f:
        while block := f.read(8 << 20):
            crc.update(block)
            size += len(block)
    return size, crc.hexdigest().decode()
