"""Phase one of sharding, run in worker threads: read a chunk, split it, encode it, spool it.

Each chunk's train and eval records go to two local spool files in input order, so the
writer knows exact counts and sizes before it cuts shards. No TensorFlow here.
"""

import dataclasses
import os
import zlib
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data import missing
from tfkfp.components.common.data.dataset import SPLITS
from tfkfp.components.common.data.examples import encode_blocks, encode_examples, pack_columns
from tfkfp.components.common.data.packing import PackedGroup
from tfkfp.components.common.platform import scratch
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import row_location
from tfkfp.components.shard_tfrecords.sources import Chunk, RawColumn, read_chunk

TRAIN_NAMES = ("train", "training")
EVAL_NAMES = ("eval", "evaluation", "validation", "valid", "val", "test")
_BUCKETS = 1_000_000


@dataclasses.dataclass(frozen=True)
class EncodePlan:
    columns: Tuple[RawColumn, ...]  # as read from the input
    keys: Tuple[str, ...]
    label: str | None
    split_column: str | None
    eval_fraction: float
    spool_dir: str
    missing: str = "impute"  # a common.data.missing policy
    packed: Tuple[PackedGroup, ...] = ()  # the packed layout's groups (none: one per column)
    block_rows: int = 0  # rows per record in the blocks layout (0: one row per record)


@dataclasses.dataclass
class ChunkResult:
    index: int
    lengths: Dict[str, np.ndarray]  # record sizes per split, in order
    labels: np.ndarray | None  # distinct label values seen
    gaps: Dict[str, int] = dataclasses.field(default_factory=dict)  # rows with gaps, by column
    rows: Dict[str, np.ndarray] | None = None  # rows each record holds (None: one each)

    def record_rows(self, split: str) -> np.ndarray:
        if self.rows is None:
            return np.ones(len(self.lengths[split]), dtype=np.int64)
        return self.rows[split]


def spool_path(spool_dir: str, index: int, split: str) -> str:
    return os.path.join(spool_dir, f"chunk-{index:06d}.{split}")


def encode_chunk(chunk: Chunk, plan: EncodePlan) -> ChunkResult:
    data = read_chunk(chunk, list(plan.columns))
    rows = len(next(iter(data.values())))
    if rows == 0:
        for split in SPLITS:
            scratch.open_private(spool_path(plan.spool_dir, chunk.index, split)).close()
        return ChunkResult(chunk.index, {s: np.zeros(0, np.int64) for s in SPLITS}, None)
    gaps = count_gaps(data, plan, chunk)
    is_eval = _eval_mask(data, plan, chunk)
    written = {c.name: (c.dtype, data[c.name]) for c in plan.columns
               if c.name != plan.split_column}
    lengths, rows_per_record = {}, {}
    for split, mask in zip(SPLITS, (~is_eval, is_eval)):
        subset = {name: (dtype, values[mask]) for name, (dtype, values) in written.items()}
        path = spool_path(plan.spool_dir, chunk.index, split)
        lengths[split], rows_per_record[split] = _spool(pack_columns(subset, plan.packed),
                                                        path, plan.block_rows)
    labels = None
    if plan.label is not None:
        labels = np.unique(data[plan.label].astype(str) if data[plan.label].dtype == object
                           else data[plan.label])
    return ChunkResult(chunk.index, lengths, labels, gaps,
                       rows_per_record if plan.block_rows else None)


def count_gaps(data: Dict[str, np.ndarray], plan: EncodePlan, chunk: Chunk) -> Dict[str, int]:
    """Rows with a gap, per column; a gap in the label, or under the ``error`` policy the
    first gap of the chunk, is refused naming its row and column."""
    rows = {c.name: missing.gap_rows(data[c.name], c.dtype) for c in plan.columns
            if c.name != plan.split_column and c.image_shape is None}
    rows = {name: found for name, found in rows.items() if found.any()}
    refused = [plan.label] if plan.label in rows else list(rows) if plan.missing == "error" \
        else []
    if refused:
        first = {name: int(np.flatnonzero(rows[name])[0]) for name in refused}
        name = min(first, key=first.get)
        what = "missing label" if name == plan.label else "missing value"
        hint = "" if name == plan.label else " (missing='impute' keeps such rows)"
        dtype = next(c.dtype for c in plan.columns if c.name == name)
        raise ShardInputError(f"{row_location(chunk, first[name])}, column {name!r}: {what} "
                              f"(blank, null or NaN); expected {dtype}{hint}")
    return {name: int(found.sum()) for name, found in rows.items()}


def _spool(columns: Dict[str, Tuple[str, np.ndarray]], path: str, block_rows: int = 0
           ) -> Tuple[np.ndarray, np.ndarray]:
    """Write the records to ``path``; their sizes and the rows each holds."""
    rows = len(next(iter(columns.values()))[1])
    if rows == 0:
        scratch.open_private(path).close()
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if block_rows:
        records, counts = encode_blocks(columns, block_rows)
    else:
        records, counts = encode_examples(columns), np.ones(rows, dtype=np.int64)
    data, lengths = records.flat()
    with scratch.open_private(path) as f:  # the user's rows, in the shared temp directory
        f.write(memoryview(np.ascontiguousarray(data)))
    return lengths.copy(), counts


def _eval_mask(data: Dict[str, np.ndarray], plan: EncodePlan, chunk: Chunk) -> np.ndarray:
    if plan.split_column:
        return _split_column_mask(data[plan.split_column], plan.split_column, chunk)
    hashed = [data[k] for k in plan.keys] or [
        data[c.name] for c in plan.columns if c.name != plan.split_column]
    bucket = row_hash(hashed) % np.uint64(_BUCKETS)
    return bucket < np.uint64(round(plan.eval_fraction * _BUCKETS))


def _split_column_mask(values: np.ndarray, name: str, chunk: Chunk) -> np.ndarray:
    text = np.char.lower(np.asarray(values).astype(str))
    is_train, is_eval = np.isin(text, TRAIN_NAMES), np.isin(text, EVAL_NAMES)
    bad = np.flatnonzero(~(is_train | is_eval))
    if len(bad):
        raise ShardInputError(
            f"{chunk.uri}, row {bad[0] + 1} of chunk {chunk.index}, split column {name!r}: "
            f"found {values[bad[0]]!r}, expected one of {', '.join(TRAIN_NAMES + EVAL_NAMES)}")
    return is_eval


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads every input bit over the whole word."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def row_hash(arrays: List[np.ndarray]) -> np.ndarray:
    """A stable 64-bit hash of each row's values (same on every machine and run)."""
    rows = len(arrays[0])
    h = np.full(rows, 0x9E3779B97F4A7C15, dtype=np.uint64)
    for arr in arrays:
        flat = arr.reshape(rows, -1)
        if flat.dtype == object:
            words = np.fromiter(
                (zlib.crc32(v if isinstance(v, bytes) else str(v).encode()) for v in flat.ravel()),
                dtype=np.uint64, count=flat.size).reshape(flat.shape)
        elif flat.dtype.kind == "f":
            words = flat.astype("<f4").view("<u4").astype(np.uint64)
        else:
            words = flat.astype("<i8").view("<u8")
        for j in range(words.shape[1]):
            h = _mix(h ^ words[:, j])
    return h
