"""Shard tabular or image data into TFRecord files with a schema and a manifest.

The output directory gets ``train/`` and ``eval/`` shards named
``data-SSSSS-of-NNNNN.tfrecord[.gz]``, ``schema.json`` and ``manifest.json`` (record
counts, bytes and CRC32C per shard). Work happens in two phases: worker threads read,
split and encode chunks of the input into local spool files (parallel across cores), then
shards are cut from the spools with exact, equal record counts. Everything is written in a
staging folder first and published atomically at the end, manifest last (see ``publish``):
at every instant the output is the previous Dataset or the new one. The staging and spool
folders go away when the run ends, on SIGTERM too; a killed run's are removed by the next.
"""

import concurrent.futures
import dataclasses
import time
from typing import Dict, List, Sequence, Tuple

from tfkfp.components.common.data.dataset import Manifest, select_group
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.platform import scratch, uris
from tfkfp.components.common.platform.cpus import threads_or_cpus
from tfkfp.components.common.platform.progress import Progress, log
from tfkfp.components.shard_tfrecords import publish, sources, summary, writer
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.options import ShardOptions
from tfkfp.components.shard_tfrecords.worker import ChunkResult, EncodePlan, encode_chunk

MAX_VOCABULARY = 10_000
MIN_SPLIT_RECORDS = 10  # fewer eval records cannot say much about accuracy


@dataclasses.dataclass(frozen=True)
class ShardResult:
    dataset: str
    schema: Schema
    records: Dict[str, int]  # per split
    bytes: Dict[str, int]
    shards: Dict[str, List[writer.ShardInfo]]
    compression: str
    input_files: int
    seconds: float  # the step's wall time, start-up included
    busy_seconds: float = 0.0  # reading, encoding and writing the records: the rate's time
    warnings: Tuple[str, ...] = ()
    shard_dir: str = ""  # where the shards are, when not inside the Dataset directory

    @property
    def total_records(self) -> int:
        return sum(self.records.values())

    @property
    def records_per_second(self) -> float:
        """The step's own throughput: records over the time spent on them, not on start-up
        (importing TensorFlow), so the console and the UI's Metrics show one figure."""
        return self.total_records / max(self.busy_seconds or self.seconds, 1e-9)

    def metadata(self) -> Dict:
        return {
            "records": self.records, "bytes": self.bytes, "compression": self.compression,
            "num_shards": {s: len(v) for s, v in self.shards.items()},
            "schema": self.schema.summary(), "input_files": self.input_files,
            "records_per_second": round(self.records_per_second, 1),
            "seconds": round(self.seconds, 6), "busy_seconds": round(self.busy_seconds, 6),
            "warnings": list(self.warnings),
        }

    def markdown(self) -> str:
        return summary.render(self)


def shard_tfrecords(input_uri: str, dataset: str, options: ShardOptions | None = None, *,
                    shard_dir: str = "", progress_stream=None, **settings) -> ShardResult:
    """Shard the input into TFRecords under dataset; see the module docstring.

    Args:
        input_uri: a file, folder, glob pattern or gs:// URI of CSV, JSON Lines, Parquet or
            .npz files, or a folder with one subfolder of images per class.
        dataset: where the Dataset directory is written (created if missing).
        options: how to shard (options.ShardOptions: every setting, its default, choices
            and meaning); or give its settings as keywords, e.g. ``label="y"``. Its
            data_root is the step's, resolved into ``shard_dir`` by the component. With
            ``input_format`` images, the label is the class folder and the key the file.
        shard_dir: where the shards go (a path or URI; empty: inside ``dataset``). The
            Dataset directory then holds only schema.json and manifest.json, which lists the
            shards by URI, so a step that takes the Dataset as an artifact downloads a few
            kilobytes and reads the shards where they are (see common.data.data_root).

    The manifest's ``records`` count rows (examples) in every layout; a ``blocks`` shard
    also lists its ``blocks`` (TFRecord records).
    """
    started = time.monotonic()
    options = ShardOptions.given(options, settings)
    label, keys, split_column = (options.label or None, list(options.keys),
                                 options.split_column or None)
    sources.check_output_outside(input_uri, dataset)
    sources.check_output_outside(input_uri, shard_dir or dataset, "shard_dir")
    fmt, files = sources.resolve_files(input_uri, options.input_format)
    files = select_group(files, options.file_group, options.file_groups, error=ShardInputError)
    raw = sources.infer_columns(fmt, files, dict(options.column_types or {}))
    if fmt == "images":
        label, keys = sources.IMAGE_LABEL, [sources.IMAGE_KEY]
    _check_columns(raw, label, keys, split_column, files[0])
    laid_out = Schema(_columns(raw, label, keys, split_column)).with_layout(options.layout,
                                                                       options.block_rows)
    chunks = sources.plan_chunks(fmt, files)
    log.info("sharding %d %s file(s) in %d chunk(s) into %s", len(files), fmt, len(chunks),
             dataset)
    shard_dir = shard_dir or dataset
    uris.makedirs(dataset)
    uris.makedirs(shard_dir)
    publish.remove_leftovers(shard_dir)
    generation = publish.next_generation(dataset)
    with scratch.exit_on_sigterm(), \
            scratch.owned_dir(publish.spool_parent(), publish.SPOOL_PREFIX) as spool_dir, \
            scratch.owned_dir(shard_dir, publish.STAGING_PREFIX) as staging:
        plan = EncodePlan(tuple(raw), tuple(keys), label, split_column,
                          options.eval_fraction, spool_dir, options.missing, laid_out.packed,
                          laid_out.block_rows)
        import tensorflow  # noqa: F401 - imported before the clock starts: start-up, not work

        busy_started = time.monotonic()
        results = _encode_all(chunks, plan, options.threads, progress_stream)
        schema = _schema(laid_out, raw, results)
        # on an object store a rename is a copy: shards go straight to their final, unique
        # names there, published by the manifest alone (see publish)
        direct = publish.writes_in_place(shard_dir)
        shards = writer.write_shards(results, spool_dir, shard_dir if direct else staging,
                                     options, progress_stream, generation)
        result = ShardResult(
            dataset=dataset, schema=schema,
            records={s: sum(i.records for i in v) for s, v in shards.items()},
            bytes={s: sum(i.bytes for i in v) for s, v in shards.items()},
            shards=shards, compression=options.compression, input_files=len(files),
            seconds=time.monotonic() - started, busy_seconds=time.monotonic() - busy_started,
            shard_dir="" if shard_dir == dataset else shard_dir)
        result = dataclasses.replace(result, warnings=small_split_warnings(
            result, split_column) + one_class_warnings(schema))
        for warning in result.warnings:
            log.warning("%s", warning)
        schema.save(staging)
        publish.publish(staging, dataset_manifest(result, generation), shard_dir,
                        shards_in_place=direct)
    log.info("wrote %d records in %.1fs (%.0f records/s) to %s", result.total_records,
             result.seconds, result.records_per_second, dataset)
    return result


def _check_columns(raw: List[sources.RawColumn], label: str | None, keys: Sequence[str],
                   split_column: str | None, where: str) -> None:
    names = [c.name for c in raw]
    for role, name in [("label", label), ("split", split_column)] + [("key", k) for k in keys]:
        if name and name not in names:
            raise ShardInputError(f"{role} column {name!r} is not in {where}; its columns "
                                  f"are {names}")
    if label and (label in keys or label == split_column):
        raise ShardInputError(f"column {label!r} cannot be both the label and a key or split")


def _encode_all(chunks: List[sources.Chunk], plan: EncodePlan, threads: int,
                stream) -> List[ChunkResult]:
    """Encode every chunk, in parallel threads, returning results in chunk order.

    Threads, not processes: pyarrow's parsers and NumPy's array operations release the
    GIL, so two threads ran 1.8x one on 2 cores, faster than two spawned processes (which
    pay start-up and pickling) and without their main-module pitfalls.
    """
    total = sum(c.size for c in chunks)
    unit = "bytes" if chunks[0].fmt in ("csv", "jsonl") else "chunks"
    progress = Progress("reading and encoding", total=total, unit=unit, stream=stream)
    threads = min(threads_or_cpus(threads), len(chunks))
    results: List[ChunkResult] = []
    with concurrent.futures.ThreadPoolExecutor(max(threads, 1)) as pool:
        pending = []
        try:
            for chunk in chunks:
                pending.append((chunk, pool.submit(encode_chunk, chunk, plan)))
                while len(pending) > 2 * threads:  # bound the spooled work in flight
                    results.append(_take(pending, progress))
            while pending:
                results.append(_take(pending, progress))
        except BaseException:
            for _, future in pending:
                future.cancel()
            raise
    progress.finish()
    return results


def _take(pending, progress: Progress) -> ChunkResult:
    chunk, future = pending.pop(0)
    result = future.result()
    progress.update(chunk.size)
    scratch.pause_point("encoding")
    return result


def _columns(raw, label: str | None, keys: Sequence[str], split_column: str | None
             ) -> Tuple[Column, ...]:
    """The written columns with their roles (no label vocabulary or gap counts yet)."""
    return tuple(
        Column(col.name, col.dtype, col.shape,
               "label" if col.name == label else "key" if col.name in keys else "feature",
               encoding="image" if col.image_shape else None, image_shape=col.image_shape)
        for col in raw if col.name != split_column)


def _schema(laid_out: Schema, raw, results: List[ChunkResult]) -> Schema:
    """``laid_out`` completed with the label's vocabulary and each column's gap count."""
    by_name = {col.name: col for col in raw}
    columns = tuple(dataclasses.replace(
        col, vocabulary=_vocabulary(by_name[col.name], results) if col.role == "label" else None,
        missing=sum(r.gaps.get(col.name, 0) for r in results)) for col in laid_out.columns)
    return dataclasses.replace(laid_out, columns=columns)


def small_split_warnings(result: ShardResult, split_column: str | None) -> Tuple[str, ...]:
    """A split too small to train on or to measure with: said in the log and the summary."""
    fix = f"the {split_column!r} column's values" if split_column else "eval_fraction"
    warnings = []
    for split, records in result.records.items():
        if records == 0:
            warnings.append(f"the {split} split has no records: train cannot use this "
                            f"Dataset; give it more rows or change {fix}")
        elif records < MIN_SPLIT_RECORDS:
            warnings.append(f"the {split} split has only {records} record(s), too few to "
                            f"measure with (under {MIN_SPLIT_RECORDS}); give it more rows or "
                            f"change {fix}")
    return tuple(warnings)


def one_class_warnings(schema: Schema) -> Tuple[str, ...]:
    """A label with one class would train a model that is always right: train refuses it."""
    label = schema.label
    if label is None or label.vocabulary is None or len(label.vocabulary) != 1:
        return ()
    return (f"the label {label.name!r} has one class only, {label.vocabulary[0]!r}: train "
            "refuses it (a model of one class is right whatever it learns); give it rows of "
            "at least two classes",)


def _vocabulary(col: sources.RawColumn, results: List[ChunkResult]):
    """Sorted distinct labels for a classification label; None for a float target."""
    if col.dtype == "float32" or col.shape:
        return None
    seen = set()
    for r in results:
        if r.labels is not None:
            seen.update(r.labels.tolist())
            if len(seen) > MAX_VOCABULARY:
                return None
    return tuple(sorted(seen))


def dataset_manifest(result: ShardResult, generation: int = 0) -> Manifest:
    """The manifest: shards by their path inside the Dataset, or by URI where they are
    kept elsewhere (``shard_dir``)."""
    def entry(info: writer.ShardInfo) -> Dict:
        body = info.to_dict()
        if result.shard_dir:
            body["file"] = uris.join(result.shard_dir, info.file)
        return body

    return Manifest(result.dataset, {
        s: {"records": result.records[s], "bytes": result.bytes[s],
            "shards": [entry(i) for i in result.shards[s]]} for s in result.shards},
        result.compression, generation=generation)
