"""The batch_prediction pipeline: fan batch_predict out over groups of shards, merge the counts.

The model and the data come in by URI through ``dsl.importer``. The data is either an
existing Dataset directory of TFRecord shards (``dataset_uri``) or input files
(``input_uri``: CSV, JSON Lines, Parquet, .npz or images; ``csv_uri`` before), which are
first sharded by shard_tfrecords. One batch_predict task per file group runs inside a
``dsl.ParallelFor`` (one pod each on a cluster), and merge_predictions adds the groups' counts
into one summary. Everything runs under the KFP local runner too.

With ``endpoint_url`` the batch_predict tasks send their rows to a model already serving them
(tfkfp serve, a KServe InferenceService) instead of loading it; each task's Metrics name the
path taken (``path``: ``step`` or ``endpoint``). ``model_uri`` stays required then: the
model artifact names the columns to send and the class ids (and ties the run's lineage to
the model), and an optional importer would put a condition around every fan-out branch of the
DAG for a file that a deployment has anyway.

``max_error_fraction`` is applied once, by the merge, to the rows of all the groups together:
a group's own share may be higher when the run's is not, and the groups' outputs, whose errors
files the merge's message names, are kept on a cluster because their steps succeeded.
"""

from typing import Any, Dict, List

from kfp import dsl

from tfkfp.components.batch_predict.component import batch_predict, merge_predictions
from tfkfp.components.shard_tfrecords.component import group_numbers, shard_tfrecords
from tfkfp.pipelines import checks
from tfkfp.pipelines.fan_out import check_group_count, fingerprinted
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import by_name, defaults_of

# a parameter's default is the step's: step_defaults.py
DEFAULTS = defaults_of(shard_tfrecords, batch_predict, merge_predictions)


@dsl.pipeline(name="tfkfp-predict-shards")
def predict_shards(model: dsl.Model, dataset: dsl.Dataset, file_groups: int,
                   output_format: str, keys: List[str], top_k: int, predict_batch_size: int,
                   split: str, max_error_fraction: float, endpoint_url: str,
                   endpoint_model: str, endpoint_protocol: str, endpoint_batch_rows: int,
                   endpoint_concurrency: int, endpoint_headers: Dict[str, str],
                   endpoint_token_file: str, endpoint_token_env: str, endpoint_retries: int,
                   endpoint_timeout_s: float, beam_runner: str,
                   beam_options: Dict[str, str]) -> dsl.Markdown:
    """Fan batch_predict out over file groups and merge the counts; the merge fails the run
    when more than max_error_fraction of all the rows are errors."""
    groups = group_numbers(count=file_groups)
    with dsl.ParallelFor(groups.output) as group:
        task = batch_predict(**by_name(
            batch_predict, locals(), model=model, dataset=dataset, file_group=group,
            max_error_fraction=1.0))  # the merge applies it to all rows
    merged = merge_predictions(predictions=dsl.Collected(task.outputs["predictions"]),
                               max_error_fraction=max_error_fraction)
    return merged.outputs["summary"]


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-batch-prediction")
def batch_prediction(
    model_uri: str,
    dataset_uri: str = "",
    input_uri: str = "",
    keys: List[str] = DEFAULTS.keys,
    label: str = DEFAULTS.label,
    column_types: Dict[str, str] = DEFAULTS.column_types,
    input_format: str = DEFAULTS.input_format,
    num_shards: int = DEFAULTS.num_shards,
    layout: str = DEFAULTS.layout,
    file_groups: int = DEFAULTS.file_groups,
    output_format: str = DEFAULTS.output_format,
    top_k: int = DEFAULTS.top_k,
    predict_batch_size: int = DEFAULTS.predict_batch_size,
    split: str = DEFAULTS.split,
    max_error_fraction: float = DEFAULTS.max_error_fraction,
    endpoint_url: str = DEFAULTS.endpoint_url,
    endpoint_model: str = DEFAULTS.endpoint_model,
    endpoint_protocol: str = DEFAULTS.endpoint_protocol,
    endpoint_batch_rows: int = DEFAULTS.endpoint_batch_rows,
    endpoint_concurrency: int = DEFAULTS.endpoint_concurrency,
    endpoint_headers: Dict[str, str] = DEFAULTS.endpoint_headers,
    endpoint_token_file: str = DEFAULTS.endpoint_token_file,
    endpoint_token_env: str = DEFAULTS.endpoint_token_env,
    endpoint_retries: int = DEFAULTS.endpoint_retries,
    endpoint_timeout_s: float = DEFAULTS.endpoint_timeout_s,
    beam_runner: str = DEFAULTS.beam_runner,
    beam_options: Dict[str, str] = DEFAULTS.beam_options,
    data_root: str = DEFAULTS.data_root,
):
    """Batch prediction with a tfkfp model over sharded TFRecords (or input files sharded first),
    the model loaded in the steps or, with endpoint_url, already serving at an endpoint.

    Args:
        model_uri: A tfkfp SavedModel or TFLite bundle directory (gs:// on a cluster).
        dataset_uri: A Dataset directory of TFRecord shards; used when input_uri is empty.
        input_uri: A file, folder or pattern of input data (CSV, JSON Lines, Parquet,
            .npz or images) to shard first with shard_tfrecords; formerly csv_uri.
        keys: Passthrough key columns (sharding: the key columns; prediction: carried).
        label: The input's label column, if it has one (kept out of the model inputs).
        column_types: Column types overriding inference, e.g. {"zip": "string"}: float32,
            int64 or string.
        input_format: Format of input_uri's files: auto (from their extensions), csv, jsonl,
            parquet, npz or images.
        num_shards: Shards per split when sharding the input (0: by size, at least 2).
        layout: Record layout when sharding the input: packed (scalar numbers as one list
            feature per dtype), columns (one feature per column) or blocks (packed, 256 rows
            per record: fastest to read, tfkfp readers only).
        file_groups: How many parallel batch_predict tasks share the shards.
        output_format: jsonl, csv or tfrecord.
        top_k: How many best classes and scores each prediction lists.
        predict_batch_size: Records per model call.
        split: all, or one split of the Dataset (train, eval).
        max_error_fraction: Largest share of all the rows that may fail prediction
            (unreadable, unparsable or failed by the model); above it the merge step fails
            the run, naming how many rows failed and the groups' errors files (0: any error
            fails it; 1: none does).
        endpoint_url: Empty: each step loads the model. Else the base URL of a server
            already serving it (tfkfp serve, a KServe InferenceService's
            status.address.url), or a Vertex AI Endpoint's resource name or URL with
            endpoint_protocol vertex: the rows go there in mini-batches and each
            prediction names the endpoint and model_version that answered. model_uri
            still names the model: its schema gives the columns sent, its classes the
            class ids.
        endpoint_model: The model's name in the endpoint's URLs (not used by vertex).
        endpoint_protocol: v2 (Open Inference Protocol), v1 (KServe v1 rows) or vertex
            (a Vertex AI Endpoint, called with the steps' Google credentials).
        endpoint_batch_rows: Rows per request.
        endpoint_concurrency: Requests in flight at once, per batch_predict task.
        endpoint_headers: Extra request headers (e.g. Host for an ingress); no credentials.
        endpoint_token_file: A file in the step's pod holding a bearer token.
        endpoint_token_env: An environment variable of the step holding a bearer token.
        endpoint_retries: Attempts after the first on 429, 502, 503, 504, lost
            connections and timeouts, with exponential backoff (0.5 s doubling, at most
            15 s).
        endpoint_timeout_s: Seconds a request waits for the connection and for each read
            of the answer before the attempt counts as lost (above 0); the steps log every
            few seconds how long the oldest request in flight has waited.
        beam_runner: Empty: each step predicts in its pod. Else each batch_predict task
            runs its prediction as an Apache Beam job: direct (Beam's FnApiRunner in the
            step), dataflow (Google Cloud Dataflow, followed and cancelled by the step) or
            portable (a Flink or Spark job server). With Beam, keep file_groups at 1: the
            runner spreads the files over its workers.
        beam_options: The runner's settings, e.g. {"project": "p", "region":
            "us-central1", "temp_location": "gs://b/tmp", "sdk_container_image": "..."}
            for dataflow, {"job_endpoint": "host:8099"} for portable.
        data_root: Where the input's shards are kept: auto (beside the Dataset artifact on
            the pipeline root's object store when the steps can write there, else inside
            it), inside, or a path or s3://, minio://, gs:// URI; see shard_tfrecords.
    """
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    # what each branch's fan-out is given, whichever way the Dataset came
    predicting = by_name(predict_shards, locals())
    with dsl.If(input_uri != "", name="shard-input"):
        sharded = shard_tfrecords(input_uri=input_uri, label=label, keys=keys,
                                  column_types=column_types, input_format=input_format,
                                  num_shards=num_shards, layout=layout, data_root=data_root,
                                  input_fingerprint=fingerprinted(input_uri, input_format).output)
        predict_shards(model=model.output, dataset=sharded.outputs["dataset"], **predicting)
    with dsl.Else(name="existing-shards"):
        dataset = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset,
                               reimport=False)
        predict_shards(model=model.output, dataset=dataset.output, **predicting)


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse a request without data, a bad group count, split, or what shard_tfrecords or
    batch_predict would refuse before reading anything (by their own checks), before a run
    starts."""
    from tfkfp.components.batch_predict.merge import check_error_fraction
    from tfkfp.components.batch_predict.options import PredictOptions, check_beam
    from tfkfp.components.batch_predict.options import endpoint_options as check_endpoint
    from tfkfp.components.common.data.dataset import SPLITS
    from tfkfp.components.shard_tfrecords.options import ShardOptions

    values = checks.with_defaults(batch_prediction, arguments)
    if not values["dataset_uri"] and not values["input_uri"]:
        raise ValueError("there is nothing to predict: pass --set dataset_uri=... (a Dataset "
                         "directory of TFRecord shards) or --set input_uri=... (files to "
                         "shard)")
    check_group_count(values["file_groups"], "file_groups")
    if values["split"] not in ("all", *SPLITS):
        raise ValueError(f"split {values['split']!r} is not one of all, {', '.join(SPLITS)}")
    if values["input_uri"]:
        checks.check_step(shard_tfrecords, ShardOptions,
                          checks.fed(batch_prediction, shard_tfrecords, values))
    predicting = checks.fed(batch_prediction, batch_predict, values)
    for check in (PredictOptions, check_endpoint, check_beam):
        checks.check_step(batch_predict, check, predicting)
    checks.check_step(merge_predictions, check_error_fraction,  # the limit on all the rows
                      checks.fed(batch_prediction, merge_predictions, values))
