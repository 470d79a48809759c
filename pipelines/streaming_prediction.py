"""The streaming_prediction pipeline: a model's predictions for a Pub/Sub stream.

The model comes in by URI through ``dsl.importer``; stream_predict runs the Apache Beam
streaming job: on Dataflow (the default) it launches the job and returns once it runs, the
job's ``gcp_resources`` naming it (a stream outlives the pipeline run; ``follow`` keeps the
step until the job ends and drains it when the step is stopped); with ``runner=direct``
the job runs inside the step until ``max_messages`` or ``duration_s``.
"""

from typing import Any, Dict, List

from kfp import dsl

from tfkfp.components.stream_predict.component import stream_predict
from tfkfp.pipelines import checks
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import by_name, defaults_of

DEFAULTS = defaults_of(stream_predict)  # a parameter's default is the step's: step_defaults.py


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-streaming-prediction")
def streaming_prediction(
    model_uri: str,
    subscription: str,
    output_topic: str,
    dead_letter_topic: str,
    keys: List[str] = DEFAULTS.keys,
    top_k: int = DEFAULTS.top_k,
    max_batch_size: int = DEFAULTS.max_batch_size,
    max_batch_wait_s: float = DEFAULTS.max_batch_wait_s,
    max_messages: int = DEFAULTS.max_messages,
    duration_s: float = DEFAULTS.duration_s,
    drain_s: float = DEFAULTS.drain_s,
    id_label: str = DEFAULTS.id_label,
    runner: str = DEFAULTS.runner,
    beam_options: Dict[str, str] = DEFAULTS.beam_options,
    follow: bool = DEFAULTS.follow,
    endpoint_url: str = DEFAULTS.endpoint_url,
    endpoint_model: str = DEFAULTS.endpoint_model,
    endpoint_protocol: str = DEFAULTS.endpoint_protocol,
    endpoint_headers: Dict[str, str] = DEFAULTS.endpoint_headers,
    endpoint_token_file: str = DEFAULTS.endpoint_token_file,
    endpoint_token_env: str = DEFAULTS.endpoint_token_env,
    endpoint_retries: int = DEFAULTS.endpoint_retries,
    endpoint_timeout_s: float = DEFAULTS.endpoint_timeout_s,
):
    """Predictions for the rows of a Pub/Sub subscription, one message per row to
    output_topic, every row that cannot be predicted to dead_letter_topic.

    Args:
        model_uri: A tfkfp SavedModel or TFLite bundle directory (gs:// on Dataflow).
        subscription: The input, projects/P/subscriptions/S: a message is one row (a JSON
            object) or several (a JSON array).
        output_topic: One prediction message per row, projects/P/topics/T.
        dead_letter_topic: One message per row that cannot be predicted, naming why.
        keys: Row fields carried into each prediction.
        top_k: How many best classes and scores each prediction lists.
        max_batch_size: Rows per model call at most.
        max_batch_wait_s: Seconds a row may wait for its batch to fill.
        max_messages: Stop a local job after this many messages (0: no limit).
        duration_s: Stop a local job after this many seconds (0: no limit).
        drain_s: Seconds a stopped local job waits for the rows it pulled to be written.
        id_label: The attribute publishers set to a unique id, by which Dataflow drops a
            message published twice.
        runner: dataflow (the default), direct (inside the step, bounded by
            max_messages or duration_s) or portable.
        beam_options: The runner's settings, e.g. {"project": "p", "region":
            "us-central1", "temp_location": "gs://b/tmp", "sdk_container_image": "..."}.
        follow: With dataflow, stay until the job ends and drain it when stopped.
        endpoint_url: Predict through this serving endpoint instead of loading the model
            in the job (one request a batch; the model then names the columns sent).
        endpoint_model: The model's name in the endpoint's URLs.
        endpoint_protocol: v2 (Open Inference Protocol), v1 (KServe v1) or vertex.
        endpoint_headers: Extra request headers (e.g. Host for an ingress); never a token.
        endpoint_token_file: A file holding a bearer token (e.g. a mounted Secret).
        endpoint_token_env: An environment variable holding a bearer token.
        endpoint_retries: Attempts after the first on 429, 502-504 and lost connections.
        endpoint_timeout_s: Seconds to wait for each read of an answer.
    """
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    stream_predict(**by_name(stream_predict, locals(), model=model.output))


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse what stream_predict would refuse before any work, before a run starts."""
    from tfkfp.components.common.beam.runners import check_runner
    from tfkfp.components.stream_predict.options import (
        StreamOptions,
        check_runner_fits,
        stream_endpoint,
    )

    given = checks.fed(streaming_prediction, stream_predict,
                       checks.with_defaults(streaming_prediction, arguments))
    checks.check_step(stream_predict, stream_endpoint, given)
    options = checks.check_step(stream_predict, StreamOptions, given)

    def runner_fits(runner: str, beam_options: Dict[str, str]) -> None:
        if beam_options or runner != "dataflow":  # Dataflow's are set per run, not compiled
            check_runner(runner, dict(beam_options or {}))
        check_runner_fits(options, runner, in_step=True)

    checks.check_step(stream_predict, runner_fits, given)
