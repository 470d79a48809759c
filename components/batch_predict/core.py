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

Here: the checks and the choice of path. The step's loop is task.py's, the readers
reading.py's, the result and its summary file result.py's, the Beam job beam_job.py's.
"""

import dataclasses
import time
from typing import Dict, List

from tfkfp.components.batch_predict import evaluation, reading, sources
from tfkfp.components.batch_predict.errors import PredictInputError, model_errors
from tfkfp.components.batch_predict.merge import refuse_errors
from tfkfp.components.batch_predict.options import EndpointOptions, PredictOptions, check_beam
from tfkfp.components.batch_predict.result import PredictResult, ShardCounts, finish_outputs
from tfkfp.components.batch_predict.task import Task
from tfkfp.components.common.data.dataset import select_group
from tfkfp.components.common.model.predictor import Predictor, load_predictor
from tfkfp.components.common.model.ranking import check_top_k
from tfkfp.components.common.platform import uris, vertex_jobs
from tfkfp.components.common.platform.progress import Progress, log


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
                      tuple(reading.parsed_blocks(predictor, features).items()))
        shards = _on_beam(job, options.beam_runner, options.beam_options, gcp_resources,
                          predictor.kind)
        return _finish_beam(PredictResult(
            output_dir, output_format, predictor.describe(), shards, len(plan.files),
            file_group, file_groups, time.monotonic() - started, {}, 0.0,
            options.max_error_fraction, "beam", options.beam_runner))
    read = reading.make_reader(plan, [plan.files[i] for i in chosen], features, key_columns,
                               options.predict_batch_size,
                               {} if remote else reading.parsed_blocks(predictor, features))
    uris.makedirs(output_dir)
    total = sum(plan.expected[i] for i in chosen) if None not in plan.expected else None
    progress = Progress("predicting", total=total, stream=progress_stream)
    log.info("predicting %d of %d %s file(s) with %s into %s", len(chosen), len(plan.files),
             plan.fmt, predictor.kind, output_dir)
    sender = remote.sender(key_columns, top_k) if remote else None
    task = Task(predictor, key_columns, top_k, output_format, output_dir, progress, sender)
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
    finish_outputs(result)
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
    reading.make_reader(job.plan, [path for _i, path in job.files], list(job.features),
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
    finish_outputs(result)
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
