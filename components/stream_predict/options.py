"""What stream_predict refuses before any work (the pipelines check a request with it before
a run starts). It imports no Beam, TensorFlow or Pub/Sub client."""

import dataclasses
import re
from typing import ClassVar, Dict, List

from tfkfp.components.common.platform.step_options import REQUIRED, StepOptions, setting
from tfkfp.components.stream_predict.errors import StreamInputError

# Pub/Sub's resource names: a project id, then a name of 3-255 characters starting with a
# letter, of letters, digits and - _ . ~ + % (the service's rule)
_NAME = r"[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}"
SUBSCRIPTION = re.compile(rf"^projects/(?P<project>[a-z][a-z0-9\-]{{4,28}}[a-z0-9])"
                          rf"/subscriptions/(?P<name>{_NAME})$")
TOPIC = re.compile(rf"^projects/(?P<project>[a-z][a-z0-9\-]{{4,28}}[a-z0-9])"
                   rf"/topics/(?P<name>{_NAME})$")


@dataclasses.dataclass(frozen=True)
class StreamOptions(StepOptions):
    """A stream: where rows come from, where predictions and dead letters go, how rows are
    batched and when a local job stops; checked when built (Pub/Sub's names, the limits).
    A message is one row as a JSON object or a list of rows as a JSON array; a name not
    given yet (None, as ``tfkfp check`` asks) passes."""

    error: ClassVar = StreamInputError

    subscription: str = setting(REQUIRED, "the input, projects/P/subscriptions/S")
    output_topic: str = setting(REQUIRED, "one prediction message per row, projects/P/topics/T")
    dead_letter_topic: str = setting(REQUIRED, "one message per row that cannot be "
                                               "predicted, naming why")
    keys: List[str] = setting([], "row fields carried into each prediction")
    top_k: int = setting(1, "how many best classes and scores each prediction lists")
    max_batch_size: int = setting(64, "rows per model call at most")
    max_batch_wait_s: float = setting(1.0, "seconds a row may wait for its batch to fill")
    max_messages: int = setting(0, "stop after this many messages (0: no limit; local runs)")
    duration_s: float = setting(0.0, "stop after this many seconds (0: no limit; local runs)")
    drain_s: float = setting(10.0, "after a stop, seconds to wait for rows already pulled")
    id_label: str = setting("", "the attribute publishers set to a unique id, by which "
                                "Dataflow drops a message published twice (empty: none)")

    def check(self) -> None:
        """Refuse names Pub/Sub cannot take and limits that cannot hold, naming the
        setting."""
        _check_name("subscription", self.subscription, SUBSCRIPTION,
                    "projects/PROJECT/subscriptions/NAME")
        for name in ("output_topic", "dead_letter_topic"):
            _check_name(name, getattr(self, name), TOPIC, "projects/PROJECT/topics/NAME")
        if self.output_topic and self.output_topic == self.dead_letter_topic:
            raise StreamInputError("output_topic and dead_letter_topic are the same topic: "
                                   "predictions and dead letters need their own")
        for name in ("top_k", "max_batch_size"):
            if getattr(self, name) < 1:
                raise StreamInputError(f"{name} {getattr(self, name)} is below 1")
        for name in ("max_messages", "duration_s", "drain_s", "max_batch_wait_s"):
            if getattr(self, name) < 0:
                raise StreamInputError(f"{name} {getattr(self, name)} is below 0")


def _check_name(setting: str, value, pattern: re.Pattern, form: str) -> None:
    """A Pub/Sub name in its form; None (not given yet, as ``tfkfp check`` asks) passes."""
    if value is not None and not (isinstance(value, str) and pattern.match(value)):
        raise StreamInputError(f"{setting} {value!r}: expected {form}")


def project_of(path: str) -> str:
    return path.split("/")[1]


def attributes_of(message_attributes: Dict[str, str]) -> Dict[str, str]:
    """The input's attributes a prediction carries (the suite's own names win)."""
    return {k: v for k, v in message_attributes.items() if k not in OWN_ATTRIBUTES}


OWN_ATTRIBUTES = ("message_id", "row", "model", "model_version", "reason")


def check_runner_fits(options: StreamOptions, runner: str, in_step: bool = False) -> None:
    """What the local runner cannot do, refused before any work; in a pipeline's step it
    must also end by itself."""
    if runner == "direct" and in_step and not (options.max_messages or options.duration_s):
        raise StreamInputError("runner direct runs inside the step: set max_messages or "
                               "duration_s so it ends, or run on dataflow")
    if runner == "direct" and options.id_label:
        raise StreamInputError(f"id_label {options.id_label!r}: the local runner cannot "
                               "de-duplicate (Beam's DirectRunner refuses it); leave it empty "
                               "or run on dataflow")


def stream_endpoint(endpoint_url: str, endpoint_model: str = "model",
                    endpoint_protocol: str = "v2", endpoint_headers: Dict | None = None,
                    endpoint_token_file: str = "", endpoint_token_env: str = "",
                    endpoint_retries: int = 8, endpoint_timeout_s: float = 120.0,
                    max_batch_size: int = 64):
    """The endpoint a stream predicts through, as checked EndpointOptions (one request a
    batch of at most max_batch_size rows); None when endpoint_url is empty (the model is
    loaded in the job)."""
    from tfkfp.components.common.endpoint.options import endpoint_options

    try:
        return endpoint_options(endpoint_url, endpoint_model, endpoint_protocol,
                                max_batch_size, 1, endpoint_headers, endpoint_token_file,
                                endpoint_token_env, endpoint_retries, endpoint_timeout_s)
    except ValueError as err:
        raise StreamInputError(str(err)) from None
