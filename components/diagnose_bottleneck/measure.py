"""Timers for the three things that bound training: the input pipeline alone (raw records,
then parsed batches), the training step alone on batches held in memory, and both together.

Each timer runs for about ``seconds`` of wall time (at least a few steps), so a diagnosis
costs a bounded time whatever the dataset's size.
"""

import dataclasses
import os
import time
from typing import Callable, List, Tuple

from tfkfp.components.common.data import record_files
from tfkfp.components.common.platform import uris

MIN_STEPS = 3
READ_BATCH = 1024
WARMUP_SHARE = 0.25  # untimed share of each measurement: tracing, autotuning, allocation


@dataclasses.dataclass(frozen=True)
class Rate:
    """Records handled in some seconds, and the bytes they took on storage."""

    records: int
    seconds: float
    bytes: float = 0.0  # on storage (compressed where the shards are)
    payload_bytes: float = 0.0  # serialized tf.Example bytes

    @property
    def records_per_second(self) -> float:
        return self.records / max(self.seconds, 1e-9)


def evict_page_cache(files: List[str]) -> bool:
    """Drop local shards from the OS page cache so the next read is cold (best effort: True
    when every file was local and evicted; remote files are always read cold)."""
    evicted = True
    for path in files:
        if uris.is_remote(path) or not hasattr(os, "posix_fadvise"):
            evicted = evicted and uris.is_remote(path)
            continue
        try:
            fd = os.open(uris.local_path(path), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except OSError:
            evicted = False
    return evicted


def read_raw(files: List[str], compression: str, seconds: float) -> Rate:
    """Serialized records read (and decompressed) without parsing, the files in turn and
    again until ``seconds`` pass; the first pass reads them cold if they were evicted. The
    first batch (the pipeline's start) is not timed."""
    import tensorflow as tf

    fetch = record_files.fetched(files)  # object-store shards: through the local fetch cache
    records = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: record_files.file_records(f, compression, fetch=fetch),
        cycle_length=min(len(files), 8) or 1, num_parallel_calls=tf.data.AUTOTUNE)
    counts = records.batch(READ_BATCH).map(
        lambda b: (tf.size(b), tf.reduce_sum(tf.strings.length(b)))).repeat()
    iterator = iter(counts)
    next(iterator)  # the pipeline's start; the rest of the first pass is still cold
    start, count, payload = time.perf_counter(), 0, 0
    while time.perf_counter() - start < seconds:
        n, size = next(iterator)
        count, payload = count + int(n), payload + int(size)
    return Rate(count, time.perf_counter() - start, payload_bytes=payload)


def pipeline_rate(dataset, seconds: float, fill_batches: int = 0,
                  fill_seconds: float = 0.0) -> Tuple[Rate, bool]:
    """Records/s of a ``(features, labels)`` dataset after untimed batches: up to
    ``fill_batches`` (one epoch, to fill a cache) within ``fill_seconds``, then a warm-up
    while tf.data tunes itself. Also whether the fill finished."""
    iterator = iter(dataset)
    filled = skip(iterator, max(fill_batches, 1), fill_seconds or seconds)
    _warm(lambda: next(iterator), 0, seconds)
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        _, labels = next(iterator)
        count += int(labels.shape[0])
    return Rate(count, time.perf_counter() - start), filled


def step_rate(train_function: Callable, iterator, global_batch: int, seconds: float,
              warmup: int = 1, steps_per_call: int = 1) -> Rate:
    """Records/s through ``train_function``, which runs ``steps_per_call`` optimizer steps
    per call (a model compiled with ``steps_per_execution`` loops inside its function)."""
    logs = _warm(lambda: train_function(iterator), warmup, seconds)
    _sync(logs)
    start, calls = time.perf_counter(), 0
    while calls < MIN_STEPS or time.perf_counter() - start < seconds:
        logs = train_function(iterator)
        calls += 1
    _sync(logs)
    return Rate(calls * steps_per_call * global_batch, time.perf_counter() - start)


def skip(iterator, batches: int, seconds: float) -> bool:
    """Pull up to ``batches`` batches (to fill a cache); False if time ran out first."""
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
        if time.perf_counter() - start > seconds:
            return False
    return True


def _warm(call: Callable, times: int, seconds: float):
    """Call at least ``times`` times and for WARMUP_SHARE of ``seconds``; the last result."""
    start, result, done = time.perf_counter(), None, 0
    while done < times or time.perf_counter() - start < WARMUP_SHARE * seconds:
        result, done = call(), done + 1
    return result


def _sync(logs) -> None:
    """Wait for the device: fetch the step's loss to the host."""
    if isinstance(logs, dict) and "loss" in logs:
        float(logs["loss"])
