"""KFP component: predictions for a Pub/Sub stream, in an Apache Beam streaming job."""

from typing import Dict, List

from kfp import dsl
from kfp.dsl import Input, Metrics, Model, Output

from tfkfp.components._image import IMAGE
from tfkfp.components.common.platform.signals import exec_python


@exec_python  # a stopped step's SIGTERM reaches Python: a local job drains, Dataflow's too
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def stream_predict(
    model: Input[Model],
    subscription: str,
    output_topic: str,
    dead_letter_topic: str,
    metrics: Output[Metrics],
    gcp_resources: dsl.OutputPath(str),
    keys: List[str] = [],  # noqa: B006 - KFP reads defaults from the signature
    top_k: int = 1,
    max_batch_size: int = 64,
    max_batch_wait_s: float = 1.0,
    max_messages: int = 0,
    duration_s: float = 0.0,
    drain_s: float = 10.0,
    id_label: str = "",
    runner: str = "dataflow",
    beam_options: Dict[str, str] = {},  # noqa: B006
    follow: bool = False,
    endpoint_url: str = "",
    endpoint_model: str = "model",
    endpoint_protocol: str = "v2",
    endpoint_headers: Dict[str, str] = {},  # noqa: B006
    endpoint_token_file: str = "",
    endpoint_token_env: str = "",
    endpoint_retries: int = 8,
    endpoint_timeout_s: float = 120.0,
):
    """Predicts the rows of a Pub/Sub subscription with a tfkfp model in an Apache Beam
    streaming job: one prediction message per row to output_topic, each row that cannot
    be predicted to dead_letter_topic naming why.

    Args:
        model: A tfkfp SavedModel or TFLite bundle directory (gs:// on Dataflow).
        subscription: The input, projects/P/subscriptions/S. A message is one row (a JSON
            object) or several (a JSON array).
        output_topic: One prediction message per row, projects/P/topics/T: the row's key
            fields and the prediction's (class, class_id, score, top-k; or value), the
            input's attributes plus message_id, row, model and model_version.
        dead_letter_topic: One message per row that cannot be predicted (not JSON, a
            column missing, a non-finite value, the model failed), with the reason.
        metrics: Output counts: messages, rows, predicted, dead_lettered, unfinished.
        gcp_resources: Output naming the Dataflow job, by which Vertex AI Pipelines links
            and cancels it; no resources for a local job.
        keys: Row fields carried into each prediction.
        top_k: How many best classes and scores each prediction lists.
        max_batch_size: Rows per model call at most.
        max_batch_wait_s: Seconds a row may wait for its batch to fill.
        max_messages: Stop a local job after this many messages (0: no limit).
        duration_s: Stop a local job after this many seconds (0: no limit).
        drain_s: Seconds a stopped local job waits for the rows it pulled to be written.
        id_label: The attribute publishers set to a unique id, by which Dataflow drops a
            message published twice (empty: none; the local runner cannot use one).
        runner: dataflow (launched; the step returns once the job runs, a stream
            outlives a pipeline run), direct (Beam's local streaming runner inside the step,
            bounded by max_messages or duration_s) or portable (a Flink cluster's job server
            with Beam's cross-language Pub/Sub; not tested here).
        beam_options: The runner's settings, as batch_predict's (dataflow: project,
            region, temp_location, sdk_container_image, ...).
        follow: With dataflow, stay until the job ends and drain it when the step is
            stopped, instead of returning once it runs.
        endpoint_url: Predict through this serving endpoint (tfkfp serve, KServe, any Open
            Inference Protocol or KServe v1 server, a Vertex AI Endpoint) instead of
            loading the model in the job: one request a batch of max_batch_size rows,
            retried with backoff; the model then only names the columns sent.
        endpoint_model: The model's name in the endpoint's URLs.
        endpoint_protocol: v2 (Open Inference Protocol), v1 (KServe v1) or vertex.
        endpoint_headers: Extra request headers (e.g. Host for an ingress); never a token.
        endpoint_token_file: A file holding a bearer token (e.g. a mounted Secret).
        endpoint_token_env: An environment variable holding a bearer token.
        endpoint_retries: Attempts after the first on 429, 502-504 and lost connections.
        endpoint_timeout_s: Seconds to wait for each read of an answer.
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging

    from tfkfp.components.stream_predict.core import stream_predict as run
    from tfkfp.components.stream_predict.options import (
        StreamOptions,
        check_runner_fits,
        stream_endpoint,
    )

    logging.basicConfig(level=logging.INFO)
    options = StreamOptions.of(settings)
    check_runner_fits(options, runner, in_step=True)
    endpoint = stream_endpoint(max_batch_size=max_batch_size, **{
        k: v for k, v in settings.items() if k.startswith("endpoint_")})
    result = run(model.path, options, runner, beam_options, gcp_resources, follow, endpoint)
    metrics.metadata.update({"runner": result.runner, "job_id": result.job_id,
                             "stopped_by": result.stopped_by})
    for name in ("messages", "rows", "predicted", "dead_lettered", "unfinished"):
        metrics.log_metric(name, result.metadata()[name])
