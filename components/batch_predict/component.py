"""KFP components: batch prediction over one group of shards, and the merge of the groups."""

from typing import Dict, List

from kfp import dsl
from kfp.dsl import (
    HTML,
    Artifact,
    ClassificationMetrics,
    Dataset,
    Input,
    Markdown,
    Metrics,
    Model,
    Output,
)

from tfkfp.components._image import IMAGE
from tfkfp.components.common.platform.signals import exec_python


@exec_python  # a stopped step's SIGTERM reaches Python, which cancels a Dataflow job
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def batch_predict(
    model: Input[Model],
    dataset: Input[Dataset],
    predictions: Output[Dataset],
    metrics: Output[Metrics],
    classification: Output[ClassificationMetrics],
    charts: Output[HTML],
    gcp_resources: dsl.OutputPath(str),
    output_format: str = "jsonl",
    keys: List[str] = [],  # noqa: B006 - KFP reads defaults from the signature
    top_k: int = 1,
    predict_batch_size: int = 4096,
    split: str = "all",
    schema_uri: str = "",
    input_format: str = "auto",
    file_group: int = 0,
    file_groups: int = 1,
    labels_uri: str = "",
    max_error_fraction: float = 0.01,
    endpoint_url: str = "",
    endpoint_model: str = "model",
    endpoint_protocol: str = "v2",
    endpoint_batch_rows: int = 256,
    endpoint_concurrency: int = 4,
    endpoint_headers: Dict[str, str] = {},  # noqa: B006
    endpoint_token_file: str = "",
    endpoint_token_env: str = "",
    endpoint_retries: int = 8,
    endpoint_timeout_s: float = 120.0,
    beam_runner: str = "",
    beam_options: Dict[str, str] = {},  # noqa: B006
):
    """Predicts every record of a sharded Dataset (or CSV / JSON Lines) with a tfkfp model,
    loaded in the step, in an Apache Beam job (beam_runner), or already serving at an
    endpoint (endpoint_url).

    Args:
        model: A tfkfp SavedModel directory, a TFLite bundle directory (model.tflite and
            labels.txt) or a .tflite file. With endpoint_url it is not loaded: its schema
            names the columns sent and its classes the class ids.
        dataset: A Dataset directory from shard_tfrecords, a TFRecord file pattern, or CSV /
            JSON Lines files.
        predictions: Output directory: predictions-SSSSS-of-NNNNN.<ext> (key columns,
            class, class_id, score, top-k), errors-SSSSS-of-NNNNN.<ext> (records that could
            not be read, parsed or predicted, with the reason) and a group summary.
        metrics: Output counts (inputs, predictions, errors), the share of rows that failed
            (error_fraction) and records per second; on the eval split, the model judged
            on its labels: a classifier's macro precision, recall, F1 and per-class AUCs,
            a regressor's RMSE, MAE and R².
        classification: Output confusion matrix of a classifier on the eval split, with the
            class names, and for two classes the ROC curve of the second (other splits: a
            note saying why there is none).
        charts: Output page of charts on the eval split: a classifier's confusion matrix,
            precision, recall and F1 per class, and ROC and precision-recall curves per
            class; a regressor's predicted against true values and residuals. Other splits
            (no label) and rows an endpoint or a Beam job judged: an empty page.
        gcp_resources: Output naming the Dataflow job (beam_runner dataflow), by which
            Vertex AI Pipelines links and cancels it; no resources otherwise.
        output_format: jsonl, csv or tfrecord.
        keys: Passthrough columns carried into the predictions; empty: the schema's keys.
        top_k: How many best classes and scores each row lists.
        predict_batch_size: Records per model call.
        split: all, or one split of a Dataset directory (train, eval).
        schema_uri: schema.json for TFRecord patterns or text files (default: beside the
            data, else the model's own).
        input_format: auto, tfrecord, csv or jsonl.
        file_group: Which group of input files this task predicts (for fan-out).
        file_groups: How many groups the input files are dealt into.
        labels_uri: Class names (one per line) for a bare .tflite file.
        max_error_fraction: Largest share of rows that may be errors (records that could not
            be read, parsed or predicted); above it the step fails, naming how many rows
            failed and their errors files (0: any error fails it; 1: none does).
        endpoint_url: Empty: the model is loaded in the step. Else the base URL of a server
            already serving it (tfkfp serve, a KServe InferenceService's
            status.address.url, or its ingress with a Host header), or with
            endpoint_protocol vertex a Vertex AI Endpoint's resource name
            (projects/P/locations/L/endpoints/E) or URL: the rows are sent there in
            mini-batches, several requests in flight, and each prediction row also names
            the endpoint and model_version that answered. An endpoint that does not
            answer is refused before any work.
        endpoint_model: The model's name in the endpoint's URLs (not used by vertex).
        endpoint_protocol: v2 (Open Inference Protocol, columns; carries model_version),
            v1 (KServe v1 rows) or vertex (a Vertex AI Endpoint's :predict with v1 rows,
            requests under its 1.5 MB limit, the step's Google credentials; the version
            is the deployed model's).
        endpoint_batch_rows: Rows per request (at most the server's max_instances).
        endpoint_concurrency: Requests in flight at once.
        endpoint_headers: Extra request headers, e.g. {"Host": "m.ns.example.com"} for an
            ingress. Never a credential: use endpoint_token_file or endpoint_token_env.
        endpoint_token_file: A file holding a bearer token (a mounted Secret, a projected
            service account token), sent as Authorization: Bearer.
        endpoint_token_env: An environment variable holding a bearer token.
        endpoint_retries: Attempts after the first on 429, 502, 503, 504, lost
            connections and timeouts, with exponential backoff (0.5 s doubling, at most
            15 s). A request the server refuses (400, 413, 422, 500) is halved down to the
            rows at fault, which become error rows with the server's message; an answer
            that is not its request's (v2's id, the number of rows) makes error rows of
            its rows, naming what did not match (metric endpoint_mismatched).
        endpoint_timeout_s: Seconds a request waits for the connection and for each read
            of the answer before the attempt counts as lost (above 0). A silent endpoint
            holds a request for about (endpoint_retries + 1) times this plus the backoff;
            while requests are in flight the log says every few seconds how long the
            oldest has waited.
        beam_runner: Empty: predict in this step. Else run the prediction as an Apache
            Beam job with the suite's RunInference handler, the same files, counts and
            error rows: direct (Beam's FnApiRunner inside this step), dataflow (Google
            Cloud Dataflow; the step follows the job and cancels it when stopped) or
            portable (a Flink or Spark cluster's Beam job server).
        beam_options: The runner's settings. dataflow: project, region, temp_location
            (gs://), and optionally service_account, machine_type, max_workers,
            sdk_container_image (recommended: the suite's Beam worker image), network,
            subnetwork. portable: job_endpoint, environment_type, environment_config.
            direct: direct_num_workers.
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging

    from tfkfp.components.batch_predict.core import batch_predict as predict
    from tfkfp.components.batch_predict.options import PredictOptions, endpoint_options
    from tfkfp.components.common.charts.classes import metrics as class_metrics
    from tfkfp.components.common.charts.page import write_page
    from tfkfp.components.common.model.classification import log_to

    logging.basicConfig(level=logging.INFO)
    endpoint = endpoint_options(**{k: v for k, v in settings.items()
                                   if k.startswith("endpoint_")})
    result = predict(model.path, dataset.path, predictions.path, PredictOptions.of(settings),
                     endpoint=endpoint, gcp_resources=gcp_resources)
    predictions.metadata.update(result.metadata())
    metrics.metadata["path"] = result.path  # step, beam or endpoint: where the model ran
    for name in ("inputs", "predictions", "errors", "error_fraction", "records_per_second"):
        metrics.log_metric(name, result.metadata()[name])
    if endpoint is not None:
        for name in ("requests", "retries", "mismatched"):
            metrics.log_metric(f"endpoint_{name}", result.model[name])
    regression = (result.evaluation or {}).get("regression") or {}
    judged = {**class_metrics(result.classification() or {}),
              **{k: regression[k] for k in ("rmse", "mae", "r2") if k in regression}}
    for name, value in judged.items():
        metrics.log_metric(name, value)
    log_to(classification, result.classification())
    if not result.evaluation:  # log_to's note blames the model; here no row was judged
        classification.metadata["notes"] = [
            "no confusion matrix: only rows of the eval split predicted in the step are "
            "judged on their label"]
    write_page(charts.path, "Batch prediction", result.charts())


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def merge_predictions(
    predictions: Input[List[Dataset]],
    all_predictions: Output[Dataset],
    summary: Output[Markdown],
    metrics: Output[Metrics],
    max_error_fraction: float = 0.01,
) -> dict:
    """Gathers the predictions of fanned-out batch_predict tasks into one Dataset and merges
    their counts; fails when too many rows of all the groups together are errors.

    Args:
        predictions: The predictions directories of every batch_predict task.
        all_predictions: Output folder with every prediction and error file and the merged
            counts (summary.json).
        summary: Output Markdown table of the shards, counts and throughput.
        metrics: Output totals: inputs, predictions, errors, error_fraction, records per
            second.
        max_error_fraction: Largest share of all the groups' rows that may be errors; above
            it the step fails, naming how many rows failed and the groups' errors files.

    Returns:
        The merged counts, with every shard's prediction and error file.
    """
    from tfkfp.components.batch_predict.merge import markdown
    from tfkfp.components.batch_predict.merge import merge_predictions as merge

    merged = merge([p.path for p in predictions], all_predictions.path, max_error_fraction)
    all_predictions.metadata.update(
        {k: merged[k] for k in ("inputs", "predictions", "errors", "error_fraction")})
    with open(summary.path, "w") as f:
        f.write(markdown(merged))
    for name in ("inputs", "predictions", "errors", "error_fraction", "records_per_second"):
        metrics.log_metric(name, merged[name])
    return merged


@exec_python  # a cancelled step's SIGTERM reaches Python, which cancels the Vertex AI job
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def vertex_batch_predict(
    model: Input[Model],
    project: str,
    region: str,
    input_uris: List[str],
    output_uri_prefix: str,
    job: Output[Artifact],
    gcp_resources: dsl.OutputPath(str),
    instances_format: str = "tf-record",
    predictions_format: str = "jsonl",
    machine_type: str = "n1-standard-4",
    starting_replica_count: int = 1,
    max_replica_count: int = 4,
    vertex_batch_size: int = 0,
    gpu_type: str = "",
    gpus: int = 0,
    serving_image: str = "",
):
    """Runs batch prediction as a managed Vertex AI BatchPredictionJob.

    Uploads the tfkfp SavedModel to the Vertex Model Registry with a TensorFlow serving
    image, then creates the job and waits for it to finish. Cancelling the step cancels
    the job.

    Args:
        model: A tfkfp SavedModel in Cloud Storage (gs://).
        project: Google Cloud project.
        region: Vertex AI region, e.g. us-central1.
        input_uris: gs:// TFRecord shards (or patterns) to predict, one row per record
            (layout packed or columns, not blocks).
        output_uri_prefix: gs:// folder Vertex writes the predictions under.
        job: Output with the uploaded model's and the job's resource names.
        gcp_resources: Output naming the BatchPredictionJob, by which Vertex AI Pipelines
            links and cancels it.
        instances_format: tf-record, tf-record-gzip, jsonl, csv or file-list.
        predictions_format: jsonl, csv or bigquery.
        machine_type: Machine type of every replica, e.g. n1-highmem-8.
        starting_replica_count: Replicas the job starts with.
        max_replica_count: Replicas it may scale up to.
        vertex_batch_size: Records per request to the model (0: Vertex's default).
        gpu_type: The accelerator, e.g. NVIDIA_TESLA_T4; empty for CPU only.
        gpus: Accelerators of gpu_type per replica.
        serving_image: Serving container image (default: Vertex's prebuilt TF CPU image).
    """
    import json

    from tfkfp.components.batch_predict.vertex import (
        SERVING_IMAGE,
        VertexJob,
        check_record_layout,
        submit,
    )

    spec = VertexJob(
        project=project, region=region, model_uri=model.uri, input_uris=input_uris,
        output_uri_prefix=output_uri_prefix, instances_format=instances_format,
        predictions_format=predictions_format, machine_type=machine_type,
        starting_replica_count=starting_replica_count, max_replica_count=max_replica_count,
        batch_size=vertex_batch_size, accelerator_type=gpu_type,
        accelerator_count=gpus, serving_image=serving_image or SERVING_IMAGE)
    check_record_layout(input_uris)
    result = submit(spec, gcp_resources=gcp_resources)
    job.metadata.update(result)
    with open(job.path, "w") as f:
        json.dump(result, f)
