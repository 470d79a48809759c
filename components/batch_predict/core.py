"""Batch prediction: a tfkfp SavedModel or TFLite model over sharded TFRecords, CSV or JSONL.

Every input file k of N becomes ``predictions-k-of-N.<ext>`` (one row per record that was
predicted, with its key columns, and class, class id and scores, or a regressor's value) and
``errors-k-of-N.<ext>``
(every record that could not be read, parsed or predicted, with the reason). A task handles
one group of files (``file_group`` of ``file_groups``) so a pipeline can fan out; the
summary of a group goes to ``summary-group-G-of-M.json``.

Per file, three stages overlap: a reader thread reads and parses batches (TensorFlow ops
release the GIL), the calling thread runs the model, and a writer thread formats and writes
the previous batch; each stage's busy seconds, and the model's waits for its neighbours, are
in the result (stages.py), so a run says which stage bounds it. Each output file is written
under a temporary name and renamed when complete; a rerun overwrites it. Options, the
model, the data's schema and a Dataset's shard sizes (against its manifest) are checked
before anything is written, so a model/data mismatch or a truncated shard leaves no output
behind. A record the manifest lists but the
shard does not yield is an error row: inputs = predictions + errors = the manifest's count.
TFRecord files named by a pattern inside a Dataset directory are checked by its manifest too.

With ``endpoint`` (endpoint.py), the rows go to a model already serving them instead of a
model loaded here, in mini-batches with several requests in flight; the files are the same,
each prediction row also naming the endpoint and model version that answered it.

Rows are never lost without a word: the error count and share are in the summary, the log
and the step's metrics, and when more than ``max_error_fraction`` of the rows are errors the
run fails (after writing its outputs) naming how many of how many, and where they are.
"""

import concurrent.futures
import dataclasses
import json
import time
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.batch_predict import evaluation, sources, text, writers
from tfkfp.components.batch_predict.errors import PredictInputError, model_errors
from tfkfp.components.batch_predict.merge import (
    MAX_ERROR_FRACTION,
    SUMMARY_PREFIX,
    error_fraction,
    refuse_errors,
)
from tfkfp.components.batch_predict.options import EndpointOptions, PredictOptions, check_beam
from tfkfp.components.batch_predict.records import Chunk, ErrorRow, prefetch
from tfkfp.components.batch_predict.stages import StageClock
from tfkfp.components.batch_predict.tfrecords import missing_records
from tfkfp.components.common.data import predictions_files
from tfkfp.components.common.data.dataset import select_group
from tfkfp.components.common.data.schema import Column, scalar_of
from tfkfp.components.common.model.predictor import Predictor, load_predictor
from tfkfp.components.common.model.ranking import check_outputs, check_top_k, top_k_of
from tfkfp.components.common.platform import uris, vertex_jobs
from tfkfp.components.common.platform.halving import split_failures
from tfkfp.components.common.platform.progress import Progress, log


@dataclasses.dataclass(frozen=True)
class ShardCounts:
    input: str
    predictions_file: str
    errors_file: str
    inputs: int
    predictions: int
    errors: int
    first_error: str = ""  # where the first error row is and its reason


@dataclasses.dataclass(frozen=True)
class PredictResult:
    output_dir: str
    output_format: str
    model: Dict
    shards: List[ShardCounts]
    num_shards: int  # input files in all groups
    file_group: int
    file_groups: int
    seconds: float  # the task's wall time, loading the model included
    stages: Dict = dataclasses.field(default_factory=dict)  # stages.StageClock's figures
    busy_seconds: float = 0.0  # reading, predicting and writing the rows: the rate's time
    max_error_fraction: float = MAX_ERROR_FRACTION
    path: str = "step"  # where the model ran: "step" (loaded here), "endpoint" or "beam"
    runner: str = ""  # the Beam runner of the "beam" path
    # the model judged on rows carrying their label (evaluation.py); None: no label carried
    evaluation: Dict | None = None

    inputs = property(lambda self: sum(s.inputs for s in self.shards))
    predictions = property(lambda self: sum(s.predictions for s in self.shards))
    errors = property(lambda self: sum(s.errors for s in self.shards))

    @property
    def records_per_second(self) -> float:
        """The step's own throughput: rows over the time spent on them, not on loading the
        model, so the console and the UI's Metrics show one figure."""
        return self.inputs / max(self.busy_seconds or self.seconds, 1e-9)

    @property
    def error_fraction(self) -> float:
        return error_fraction(self.errors, self.inputs)

    def metadata(self) -> Dict:
        return {"path": self.path, **({"runner": self.runner} if self.runner else {}),
                "inputs": self.inputs, "predictions": self.predictions,
                "errors": self.errors,
                "error_fraction": round(self.error_fraction, 6),
                "max_error_fraction": self.max_error_fraction,
                "output_format": self.output_format, "num_shards": self.num_shards,
                "file_group": self.file_group, "file_groups": self.file_groups,
                "shards_done": len(self.shards), "model": self.model,
                "records_per_second": round(self.records_per_second, 1),
                # times to the microsecond: a merge divides by them, tests compare them
                "seconds": round(self.seconds, 6), "busy_seconds": round(self.busy_seconds, 6),
                "stage_seconds": dict(self.stages)}

    def summary(self) -> Dict:
        return {**self.metadata(), "shards": [dataclasses.asdict(s) for s in self.shards]}

    def charts(self) -> List:
        """The step's page: the eval split's confusion matrix and curves, or residuals."""
        return evaluation.sections(self.evaluation)

    def classification(self) -> Dict | None:
        """The eval split's matrix for KFP ``ClassificationMetrics`` (None: not a classifier
        judged on its labels)."""
        return (self.evaluation or {}).get("classification")


def batch_predict(model_uri: str, dataset: str, output_dir: str,
                  options: PredictOptions | None = None, *, predictor: Predictor | None = None,
                  endpoint: EndpointOptions | None = None, gcp_resources: str = "",
                  progress_stream=None, **settings) -> PredictResult:
    """Predict every record of this task's input files; see the module docstring.

    Args:
        model_uri: a tfkfp SavedModel directory, a TFLite bundle directory (model.tflite and
            labels.txt) or a .tflite file.
        dataset: a Dataset directory from shard_tfrecords, a TFRecord file pattern, or CSV /
            JSON Lines files (a file, folder or glob pattern).
        output_dir: where the prediction, error and summary files go (created if missing).
        options: how to predict (options.PredictOptions: every setting, its default,
            choices and meaning); or give its settings as keywords, e.g. ``top_k=2``.
            Empty keys: the schema's key columns.
        predictor: an already loaded model (tests, benchmarks); model_uri is then a label.
        endpoint: send the rows to this serving endpoint instead of loading the model
            (endpoint.py); model_uri may then be "" or a model whose schema and classes
            name the columns to send and the classes answered.
    """
    started = time.monotonic()
    options = PredictOptions.given(options, settings)
    check_beam(options.beam_runner, options.beam_options, endpoint.url if endpoint else "")
    top_k, output_format, file_group, file_groups = (
        options.top_k, options.output_format, options.file_group, options.file_groups)
    if gcp_resources:  # none until a Dataflow job is launched, which names itself there
        vertex_jobs.write_gcp_resources(gcp_resources)
    remote = None
    if endpoint is not None:
        from tfkfp.components.batch_predict.endpoint import connect

        remote = connect(endpoint, model_uri, options.labels_uri)
    else:
        with model_errors():
            predictor = predictor or load_predictor(model_uri, options.labels_uri,
                                                    options.threads)
    plan = sources.resolve_input(dataset, options.split, options.schema_uri,
                                 options.input_format,
                                 remote.schema if remote else predictor.schema)
    if remote is not None:
        predictor = remote.stand_in(plan.schema, top_k)
    features, key_columns = sources.plan_columns(predictor, plan.schema, options.keys or None,
                                                 dataset)
    # the eval split's rows carry the label, so they read against the truth without a join
    key_columns += evaluation.label_column(plan.schema, options.split, key_columns,
                                           sources.PREDICTION_COLUMNS)
    if remote is None:  # an endpoint's top_k is checked against what it answers
        with model_errors():
            check_top_k(predictor, top_k)
    chosen = select_group(range(len(plan.files)), file_group, file_groups, what="shard",
                          error=PredictInputError, allow_empty=True)
    sources.check_shards(plan, chosen)
    if options.beam_runner:
        from tfkfp.components.batch_predict.beam_job import BeamJob

        job = BeamJob(plan, tuple((i, plan.files[i]) for i in chosen), tuple(features),
                      tuple(key_columns), model_uri, options.labels_uri,
                      tuple(predictor.labels), predictor.regressor, top_k, output_format,
                      output_dir, min(options.predict_batch_size, 4096), options.threads,
                      tuple(_parsed_blocks(predictor, features).items()))
        shards = _on_beam(job, options.beam_runner, options.beam_options, gcp_resources,
                          predictor.kind)
        return _finish_beam(PredictResult(
            output_dir, output_format, predictor.describe(), shards, len(plan.files),
            file_group, file_groups, time.monotonic() - started, {}, 0.0,
            options.max_error_fraction, "beam", options.beam_runner))
    read = make_reader(plan, [plan.files[i] for i in chosen], features, key_columns,
                       options.predict_batch_size,
                       {} if remote else _parsed_blocks(predictor, features))
    uris.makedirs(output_dir)
    total = sum(plan.expected[i] for i in chosen) if None not in plan.expected else None
    progress = Progress("predicting", total=total, stream=progress_stream)
    log.info("predicting %d of %d %s file(s) with %s into %s", len(chosen), len(plan.files),
             plan.fmt, predictor.kind, output_dir)
    sender = remote.sender(key_columns, top_k) if remote else None
    task = _Task(predictor, key_columns, top_k, output_format, output_dir, progress, sender)
    busy_started = time.monotonic()
    try:
        shards = task.run(plan, chosen, read)
    finally:
        if sender is not None:
            sender.close()
    progress.finish()
    result = PredictResult(output_dir, output_format, (remote or predictor).describe(), shards,
                           len(plan.files), file_group, file_groups,
                           time.monotonic() - started, task.clock.figures(),
                           time.monotonic() - busy_started, options.max_error_fraction,
                           "endpoint" if remote else "step",
                           evaluation=task.evaluation.summary())
    _finish(result)
    stages = result.stages
    log.info("predicted %d records (%d errors, %.2f%%) in %.1fs (%.0f records/s); busy "
             "seconds: read+parse %.2f, model %.2f, format+write %.2f (bound by %s); the model "
             "waited %.2f s for input, %.2f s for the writer", result.inputs, result.errors,
             100 * result.error_fraction, result.seconds, result.records_per_second,
             stages["read"], stages["predict"], stages["write"], stages["bound_by"],
             stages["wait_input"], stages["wait_writer"])
    refuse_errors([{**dataclasses.asdict(s), "errors_file": uris.join(output_dir, s.errors_file)}
                   for s in result.shards], options.max_error_fraction)
    return result


def _on_beam(job, runner: str, settings: Dict[str, str], gcp_resources: str,
             model_kind: str) -> List[ShardCounts]:
    """The prediction as a Beam job (beam_job.py): the same checks first, then the job."""
    from tfkfp.components.batch_predict.beam_job import run_job

    # what the step checks before any output (a text file's header), checked before launch
    make_reader(job.plan, [path for _i, path in job.files], list(job.features),
                list(job.key_columns), 1, {})
    uris.makedirs(job.output_dir)
    log.info("predicting %d of %d %s file(s) with %s in a Beam job on %s into %s",
             len(job.files), len(job.plan.files), job.plan.fmt, model_kind, runner,
             job.output_dir)
    counts = run_job(job, runner, settings, _job_name(job.output_dir), gcp_resources)
    return [ShardCounts(**{k: v for k, v in c.items() if k != "index"}) for c in counts]


def _finish_beam(result: PredictResult) -> PredictResult:
    """The summary, the log line and the error limit of a Beam job's result."""
    result = dataclasses.replace(result, busy_seconds=result.seconds)  # the job's own time
    _finish(result)
    log.info("predicted %d records (%d errors, %.2f%%) in %.1fs in a Beam job on %s (%.0f "
             "records/s)", result.inputs, result.errors, 100 * result.error_fraction,
             result.seconds, result.runner, result.records_per_second)
    refuse_errors([{**dataclasses.asdict(s), "errors_file": uris.join(result.output_dir,
                                                                      s.errors_file)}
                   for s in result.shards], result.max_error_fraction)
    return result


def _job_name(output_dir: str) -> str:
    """A Dataflow-valid job name ([a-z][-a-z0-9]*) telling the output apart."""
    import hashlib

    digest = hashlib.sha256(output_dir.encode()).hexdigest()[:10]
    return f"tfkfp-batch-predict-{int(time.time())}-{digest}"


def _parsed_blocks(predictor: Predictor, features: List[Column]) -> Dict[str, Tuple[str, ...]]:
    """The model's blocks of inputs whose columns are all scalar columns of the block's
    dtype parsed here: TFRecords hand each over as one matrix (the others: by column)."""
    return {dtype: names for dtype, names in predictor.blocks.items()
            if set(names) <= {c.name for c in features if scalar_of(c, dtype)}}


def make_reader(plan: sources.InputPlan, files: List[str], features, key_columns,
                batch_size: int, blocks: Dict[str, Tuple[str, ...]]):
    """``read(paths) -> Iterator[(position, Chunk | None)]`` for the plan's format: each
    file's chunks, then None, file after file (text headers checked now); TFRecords give
    each of ``blocks`` as one matrix."""
    if plan.fmt == "tfrecord":
        from tfkfp.components.batch_predict.tfrecords import (
            first_record_rows,
            make_parser,
            read_shards,
            records_per_batch,
        )

        # "both": a pattern read with the model's schema may hold either layout, and its
        # first record says how many rows a record holds
        parse = make_parser(features, key_columns, plan.schema,
                            accept="schema" if plan.layout_known else "both", blocks=blocks)
        counted = first_record_rows(files, plan.compression, parse) \
            if plan.schema.record_layout.multi_row and not plan.layout_known else 0
        per_batch = records_per_batch(batch_size, plan.schema, counted)
        rows_per_record = counted or plan.schema.block_rows or 1
        return lambda paths: read_shards(paths, plan.compression, parse, per_batch,
                                         rows_per_record)
    for path in files:
        text.check_columns(path, plan.fmt, features + key_columns)

    def read(paths: List[str]):
        for position, path in enumerate(paths):
            yield from ((position, chunk) for chunk in
                        text.read_text(path, plan.fmt, features, key_columns, batch_size))
            yield position, None

    return read


class _Task:
    """Predicts this task's input files, one after another, into their output shards.

    One stream of chunks runs through all files, so reading the next file overlaps
    predicting and writing the last one; ``None`` after a file's chunks ends its shard.
    """

    def __init__(self, predictor: Predictor, key_columns, top_k: int, fmt: str,
                 output_dir: str, progress: Progress, sender=None):
        self.predictor, self.key_columns, self.top_k = predictor, key_columns, top_k
        self.fmt, self.output_dir, self.progress = fmt, output_dir, progress
        self.sender = sender  # endpoint.Sender: the rows go to an endpoint instead
        self.clock = StageClock()
        self.evaluation = evaluation.Evaluation(key_columns, predictor.labels,
                                                predictor.regressor)

    def run(self, plan: sources.InputPlan, chosen: List[int], read) -> List[ShardCounts]:
        clock = self.clock

        def stream():
            for position, chunk in clock.timed_iter("read", read([plan.files[i] for i in chosen])):
                yield chosen[position], chunk

        shards: Dict[int, _Shard] = {}
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pending: List[concurrent.futures.Future] = []
                for index, chunk in clock.timed_iter("wait_input",
                                                     prefetch(stream(), ahead=3)):
                    if index not in shards:
                        shards[index] = _Shard(plan, index, self.fmt, self.output_dir)
                    shard = shards[index]
                    if chunk is None:
                        pending.append(pool.submit(shard.finish, self.empty()))
                    else:
                        with clock.timing("predict"):
                            preds, failed = self.predict(chunk, shard.path)
                        shard.add(chunk, failed, preds.rows)
                        pending.append(pool.submit(clock.timed("write", shard.out.write),
                                                   preds))
                        self.progress.update(chunk.inputs)
                    while len(pending) > 2:
                        with clock.timing("wait_writer"):
                            pending.pop(0).result()
                for future in pending:
                    future.result()
        except BaseException:
            for shard in shards.values():
                shard.out.abort()
            raise
        return [shards[i].counts() for i in chosen]

    def predict(self, chunk: Chunk, path: str):
        """Top-k predictions (a regressor's values) for the chunk's rows; rows the model
        fails on become errors."""
        if self.sender is not None:
            return self.sender.predict(chunk, path)
        def attempt(lo: int, hi: int):
            return self.predictor.predict({n: v[lo:hi] for n, v in chunk.features.items()})

        good, bad = split_failures(attempt, chunk.rows)
        errors = [ErrorRow(path, int(chunk.records[i]), -1, f"prediction failed: {err}")
                  for i, err in bad]
        keep = np.setdiff1d(np.arange(chunk.rows), [i for i, _ in bad]) if bad else None
        keys = chunk.keys if keep is None else {n: v[keep] for n, v in chunk.keys.items()}
        if not good:
            return self.empty(), errors
        outputs = np.concatenate([np.asarray(p) for _, _, p in good]) if len(good) > 1 \
            else np.asarray(good[0][2])
        keys = {c.name: keys[c.name] for c in self.key_columns}
        return self.predictions(keys, outputs), errors

    def predictions(self, keys: Dict[str, np.ndarray], outputs: np.ndarray
                    ) -> writers.Predictions:
        with model_errors():
            check_outputs(self.predictor, outputs)
        self.evaluation.add(keys, outputs)
        if self.predictor.regressor:
            return writers.Predictions(keys, self.key_columns, values=outputs.reshape(-1))
        ids, scores = top_k_of(outputs, self.top_k)
        return writers.Predictions(keys, self.key_columns, ids, scores, self.predictor.labels,
                                   self.top_k)

    def empty(self) -> writers.Predictions:
        if self.sender is not None:
            return self.sender.empty()
        keys = {c.name: np.zeros(0, dtype=object if c.dtype == "string" else c.dtype)
                for c in self.key_columns}
        width = 1 if self.predictor.regressor else len(self.predictor.labels)
        shape = (0,) if self.predictor.regressor else (0, width)
        return self.predictions(keys, np.zeros(shape, np.float32))


def _finish(result: PredictResult) -> None:
    """Drop output of another layout or format from earlier runs; write the summary."""
    keep = {name for index in range(result.num_shards) for name in
            predictions_files.shard_names(index, result.num_shards,
                                          result.output_format).values()}
    for name in uris.listdir(result.output_dir):
        stale_shard = predictions_files.is_shard(name) and name not in keep
        stale_summary = name.startswith(SUMMARY_PREFIX) and \
            not name.endswith(f"-of-{result.file_groups:05d}.json")
        if stale_shard or stale_summary:
            uris.remove(uris.join(result.output_dir, name))
    name = f"{SUMMARY_PREFIX}{result.file_group:05d}-of-{result.file_groups:05d}.json"
    uris.write_text_atomic(uris.join(result.output_dir, name),
                           json.dumps(result.summary(), indent=2) + "\n")


class _Shard:
    """One input file's output: its predictions writer, its errors and its counts."""

    def __init__(self, plan: sources.InputPlan, index: int, fmt: str, output_dir: str):
        self.path, self.fmt, self.output_dir = plan.files[index], fmt, output_dir
        self.names = predictions_files.shard_names(index, len(plan.files), fmt)
        self.out = writers.ShardWriter(uris.join(output_dir, self.names["predictions"]), fmt)
        self.errors: List[ErrorRow] = []
        self.inputs = self.rows = 0
        self.expected = plan.expected[index]  # records the manifest lists, if it does
        self.unit = "record" if plan.fmt == "tfrecord" else "line"

    def add(self, chunk: Chunk, failed: List[ErrorRow], rows: int) -> None:
        self.errors += chunk.errors + failed
        self.inputs, self.rows = self.inputs + chunk.inputs, self.rows + rows

    def finish(self, empty) -> None:
        """Close the shard: rename its predictions into place, write its errors file."""
        missing = missing_records(self.path, self.expected, self.inputs)
        self.errors, self.inputs = self.errors + missing, self.inputs + len(missing)
        self.out.commit(empty)
        writers.write_errors(uris.join(self.output_dir, self.names["errors"]), self.fmt,
                             self.errors)
        if self.inputs != self.rows + len(self.errors):
            raise AssertionError(f"{self.path}: {self.inputs} records in but {self.rows} "
                                 f"predictions and {len(self.errors)} errors out")

    def counts(self) -> ShardCounts:
        first = self.errors[0] if self.errors else None
        where = f"{first.file}, {self.unit} {first.record}: {first.reason}" if first else ""
        return ShardCounts(self.path, self.names["predictions"], self.names["errors"],
                           self.inputs, self.rows, len(self.errors), where)
