"""batch_predict's prediction as an Apache Beam job (``beam_runner``): locally on Beam's
FnApiRunner, on Dataflow, or on a Flink or Spark cluster through Beam's job server.

The job reads the same input files with the same readers as the step (never ``beam.Create``
of the rows: only the file names are created), reshuffles the parsed batches so the model
stage scales apart from reading, turns them into rows (each already validated: a row that
does not parse is an error row of its own), predicts with the suite's RunInference handler
(``common.beam.handler``, batching by RunInference), and groups the answers by input file,
so every input file k of N still becomes ``predictions-k-of-N`` and ``errors-k-of-N``,
written under a temporary name and renamed, with the step's fields and error rows. What
RunInference still catches arrives as whole failed batches; each of their rows becomes an
error row. The per-file counts come back to the step in a hidden file of the output folder,
from which the step writes the usual summary; counts are also Beam Metrics (``tfkfp``
namespace: inputs, predictions, errors, model_loads).

A file's predictions are gathered on one worker to be written in record order, so a worker
holds one input file's answers at a time: shards sized for a pod fit.
"""

import collections
import dataclasses
import json
from typing import Dict, Iterable, List, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import RunInference

from tfkfp.components.batch_predict import sources, writers
from tfkfp.components.batch_predict.reading import make_reader
from tfkfp.components.batch_predict.records import Chunk, ErrorRow
from tfkfp.components.batch_predict.tfrecords import missing_records
from tfkfp.components.common.beam.handler import (
    NAMESPACE,
    KeyedTfkfpModelHandler,
    RowFailure,
    TfkfpModelHandler,
)
from tfkfp.components.common.beam.rows import block_key
from tfkfp.components.common.beam.runners import pipeline_options, run_pipeline
from tfkfp.components.common.data import predictions_files
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.progress import log

COUNTS_FILE = ".beam-shard-counts.json"  # the job's per-file counts, read back by the step
READ_BATCH = 1024  # rows per parsed batch: what moves between the read and model stages


@dataclasses.dataclass(frozen=True)
class BeamJob:
    """Everything the job's stages need, pickled to the workers."""

    plan: sources.InputPlan
    files: Tuple[Tuple[int, str], ...]  # (index among all input files, path)
    features: Tuple[Column, ...]
    key_columns: Tuple[Column, ...]
    model_uri: str
    labels_uri: str
    labels: Tuple[str, ...]
    regressor: bool
    top_k: int
    output_format: str
    output_dir: str
    batch_size: int  # rows per model call (RunInference's max_batch_size)
    threads: int = 0
    # the model's blocks of scalar columns by dtype (Predictor.blocks): each moves as one
    # vector a row (common.beam.rows.block_key)
    blocks: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()


def run_job(job: BeamJob, runner: str, settings: Dict[str, str], job_name: str,
            gcp_resources_path: str = "") -> List[Dict]:
    """Build and run the job on the runner to its end (common.beam.runners.run_pipeline);
    the per-file counts (ShardCounts fields)."""
    options = pipeline_options(runner, settings, job_name)
    counts_path = uris.join(job.output_dir, COUNTS_FILE)
    if uris.exists(counts_path):
        uris.remove(counts_path)
    pipeline = beam.Pipeline(options=options)
    build(pipeline, job)
    run_pipeline(pipeline, runner, settings, gcp_resources_path)
    counts = json.loads(uris.read_text(counts_path))
    uris.remove(counts_path)
    return sorted(counts, key=lambda c: c["index"])


def build(pipeline, job: BeamJob) -> None:
    """The job's stages, on a Beam pipeline."""
    handler = KeyedTfkfpModelHandler(TfkfpModelHandler(
        job.model_uri, top_k=job.top_k, labels_uri=job.labels_uri, threads=job.threads,
        max_batch_size=job.batch_size, min_batch_size=min(job.batch_size, 64)))
    read = (pipeline
            | "InputFiles" >> beam.Create(list(job.files))
            | "SpreadFiles" >> beam.Reshuffle()
            | "Read" >> beam.ParDo(_ReadFile(job)).with_outputs("errors", "files", main="chunks"))
    answered, failed = (read.chunks
                        | "SpreadBatches" >> beam.Reshuffle()
                        | "Rows" >> beam.FlatMap(_rows_of, job)
                        | "Predict" >> RunInference(handler).with_exception_handling())
    results = (answered | "Answers" >> beam.ParDo(_Answer(job)).with_outputs(
        "errors", main="predictions"))
    batch_errors = (failed.failed_inferences
                    | "FailedBatches" >> beam.FlatMap(_failed_batch, dict(job.files)))
    errors = ((read.errors, results.errors, batch_errors) | "AllErrors" >> beam.Flatten())
    _ = ({"files": read.files, "predictions": results.predictions, "errors": errors}
         | "ByFile" >> beam.CoGroupByKey()
         | "Write" >> beam.ParDo(_WriteShard(job))
         | "AllCounts" >> beam.combiners.ToList()
         | "Counts" >> beam.Map(_write_counts, job.output_dir))


class _ReadFile(beam.DoFn):
    """Reads one input file with the step's reader: parsed batches out, its unreadable
    records as error rows, and the file's count of inputs (the manifest's missing records
    included) once it is read."""

    def __init__(self, job: BeamJob):
        self.job = job

    def setup(self):
        # one TFRecord reader a worker, so its parser is traced once, not once a file (a
        # text reader is made per file: it reads only that file's header)
        self.read = self._reader([path for _i, path in self.job.files]) \
            if self.job.plan.fmt == "tfrecord" else None

    def _reader(self, paths: List[str]):
        job = self.job
        return make_reader(job.plan, paths, list(job.features), list(job.key_columns),
                           READ_BATCH, dict(job.blocks))

    def process(self, item):
        yield from _read_file(self.job, self.read or self._reader([item[1]]), *item)


def _read_file(job: BeamJob, read, index: int, path: str):
    inputs, errors = 0, 0
    for _position, chunk in read([path]):
        if chunk is None:
            break
        inputs, errors = inputs + chunk.inputs, errors + len(chunk.errors)
        for error in chunk.errors:
            yield beam.pvalue.TaggedOutput("errors", (index, error))
        if chunk.rows:
            yield index, Chunk(chunk.features, chunk.keys, chunk.records, [])
    missing = missing_records(path, job.plan.expected[index], inputs)
    for error in missing:
        yield beam.pvalue.TaggedOutput("errors", (index, error))
    Metrics.counter(NAMESPACE, "inputs").inc(inputs + len(missing))
    Metrics.counter(NAMESPACE, "read_errors").inc(errors + len(missing))
    yield beam.pvalue.TaggedOutput("files", (index, inputs + len(missing)))


def _rows_of(item: Tuple[int, Chunk], job: BeamJob):
    """A parsed batch as keyed rows: ((file index, record, key values), row), each block of
    the model's scalar columns one vector a row."""
    index, chunk = item
    features = _packed(chunk.features, dict(job.blocks))
    keys = [chunk.keys[c.name].tolist() for c in job.key_columns]
    for i, record in enumerate(chunk.records.tolist()):
        yield (index, record, tuple(k[i] for k in keys)), {n: v[i] for n, v in features.items()}


def _packed(features: Dict, blocks: Dict[str, Tuple[str, ...]]) -> Dict[str, np.ndarray]:
    """The chunk's columns with each block as one [rows, n] matrix under its row key (the
    TFRecord reader gives them so; text columns are stacked here, once a batch)."""
    out = {n: v for n, v in features.items() if isinstance(n, str)}
    for dtype, names in blocks.items():
        given = next((v for k, v in features.items() if getattr(k, "dtype", None) == dtype
                      and not isinstance(k, str)), None)
        if given is None:
            given = np.stack([out[n] for n in names], axis=1).astype(dtype, copy=False)
        for n in names:
            out.pop(n, None)
        out[block_key(dtype)] = given
    return out


@dataclasses.dataclass
class _Answers:
    """One file's answered rows of a bundle, as arrays: what crosses the shuffle to the
    writer (a few arrays, not one element a row)."""

    records: np.ndarray  # int64
    keys: Tuple[np.ndarray, ...]  # one array a key column
    class_ids: np.ndarray | None = None  # int64 [rows, k]
    scores: np.ndarray | None = None  # float32 [rows, k]
    values: np.ndarray | None = None  # float32 [rows] (a regressor's)


class _Answer(beam.DoFn):
    """Each answered row to its file: a prediction, gathered a bundle at a time into one
    _Answers a file, or an error row naming why."""

    def __init__(self, job: BeamJob):
        self.job, self.paths = job, dict(job.files)

    def start_bundle(self):
        self.pending: Dict[int, List] = collections.defaultdict(list)

    def process(self, keyed):  # not a generator: one runs a row, so it must be cheap
        (index, record, keys), result = keyed
        answer = result.inference
        if type(answer) is RowFailure:
            error = ErrorRow(self.paths[index], record, -1, answer.reason)
            return [beam.pvalue.TaggedOutput("errors", (index, error))]
        self.pending[index].append((record, keys, answer))
        return None

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindow
        from apache_beam.utils.windowed_value import WindowedValue

        for index, answers in self.pending.items():
            yield WindowedValue((index, _as_arrays(self.job, answers)), 0, [GlobalWindow()])
        self.pending = {}


def _as_arrays(job: BeamJob, answers: List) -> _Answers:
    records = np.asarray([a[0] for a in answers], np.int64)
    keys = tuple(_column([a[1][i] for a in answers], c) for i, c in enumerate(job.key_columns))
    if job.regressor:
        return _Answers(records, keys, values=np.asarray([a[2].value for a in answers],
                                                         np.float32))
    shape = (len(answers), job.top_k)
    return _Answers(records, keys,
                    np.asarray([a[2].class_ids for a in answers], np.int64).reshape(shape),
                    np.asarray([a[2].scores for a in answers], np.float32).reshape(shape))


def _failed_batch(failure, paths: Dict[int, str]) -> Iterable[Tuple[int, ErrorRow]]:
    """A batch RunInference gave up on: one error row per row of it."""
    batch, err = failure
    Metrics.counter(NAMESPACE, "failed_batch_rows").inc(len(batch))
    reason = f"prediction failed: {' '.join(str(err).split()) or type(err).__name__}"
    for (index, record, _keys), _row in batch:
        yield index, ErrorRow(paths[index], record, -1, reason)


class _WriteShard(beam.DoFn):
    """One input file's predictions and errors written as the step writes them."""

    def __init__(self, job: BeamJob):
        self.job = job

    def process(self, item):
        yield _write_shard(self.job, *item)


def _write_shard(job: BeamJob, index: int, grouped: Dict) -> Dict:
    path = job.plan.files[index]
    names = predictions_files.shard_names(index, len(job.plan.files), job.output_format)
    answers = _in_order(job, grouped["predictions"])
    errors = sorted(grouped["errors"], key=lambda e: e.record)
    inputs, predicted = sum(grouped["files"]), len(answers.records)
    out = writers.ShardWriter(uris.join(job.output_dir, names["predictions"]),
                              job.output_format)
    try:
        out.write(_predictions(job, answers))
        out.commit(_predictions(job, _in_order(job, [])))
    except BaseException:
        out.abort()
        raise
    writers.write_errors(uris.join(job.output_dir, names["errors"]), job.output_format, errors)
    if inputs != predicted + len(errors):
        raise AssertionError(f"{path}: {inputs} records in but {predicted} predictions and "
                             f"{len(errors)} errors out")
    Metrics.counter(NAMESPACE, "predictions").inc(predicted)
    Metrics.counter(NAMESPACE, "errors").inc(len(errors))
    unit = "record" if job.plan.fmt == "tfrecord" else "line"
    first = f"{errors[0].file}, {unit} {errors[0].record}: {errors[0].reason}" if errors else ""
    return {"index": index, "input": path, "predictions_file": names["predictions"],
            "errors_file": names["errors"], "inputs": inputs, "predictions": predicted,
            "errors": len(errors), "first_error": first}


def _in_order(job: BeamJob, parts: Iterable[_Answers]) -> _Answers:
    """A file's answers from every bundle, in record order."""
    parts = list(parts) or [_as_arrays(job, [])]
    records = np.concatenate([p.records for p in parts])
    order = np.argsort(records, kind="stable")

    def joined(name: str):
        found = [getattr(p, name) for p in parts]
        return None if found[0] is None else np.concatenate(found)[order]

    keys = tuple(np.concatenate([p.keys[i] for p in parts])[order]
                 for i in range(len(job.key_columns)))
    return _Answers(records[order], keys, joined("class_ids"), joined("scores"),
                    joined("values"))


def _predictions(job: BeamJob, answers: _Answers) -> writers.Predictions:
    """The answers as the writers' columns."""
    keys = {c.name: answers.keys[i] for i, c in enumerate(job.key_columns)}
    if job.regressor:
        return writers.Predictions(keys, list(job.key_columns), values=answers.values)
    return writers.Predictions(keys, list(job.key_columns), answers.class_ids,
                               answers.scores, list(job.labels), job.top_k)


def _column(values: List, col: Column) -> np.ndarray:
    if col.dtype == "string":
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    return np.asarray(values, dtype=col.dtype)


def _write_counts(counts: List[Dict], output_dir: str) -> None:
    uris.write_text_atomic(uris.join(output_dir, COUNTS_FILE), json.dumps(counts))
    log.info("beam job wrote %d shard(s)", len(counts))
