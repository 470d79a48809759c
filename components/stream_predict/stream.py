"""The streaming job: Pub/Sub messages in, one prediction message per row out, each row that
cannot be predicted to a dead-letter topic with its reason.

A message is one row (a JSON object) or several (a JSON array). Each row is encoded on its
own (``common.beam.rows``): a message that is not JSON, a row missing a column or holding a
non-finite value is a dead letter of its own, never its batch. The rows are batched by
RunInference (``max_batch_size``, ``max_batch_wait_s``) and predicted by the suite's handler,
the model loaded once per worker process, or sent to a serving endpoint (one request a
batch, common.beam.endpoint_handler); a row the model or the endpoint fails on is a dead
letter too.

A prediction message holds the row's key fields and batch_predict's prediction fields as
JSON; its attributes are the input's, plus ``message_id`` (the input message's), ``row``
(its place in the message), ``model`` and ``model_version`` (common.model.version: the
version folder's number or the model's fingerprint; through an endpoint, its predict URL
and the version its answer names). A dead letter holds the reason, the message id,
the row's place and the row (or the message's text) as JSON, the reason also as an
attribute. Counters (``tfkfp`` namespace): messages, rows, predicted, dead_lettered.
"""

import json
import threading
from typing import Any, Dict, List

import apache_beam as beam
from apache_beam.io.gcp.pubsub import PubsubMessage, ReadFromPubSub, WriteToPubSub
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import RunInference

from tfkfp.components.common.beam.endpoint_handler import EndpointModelHandler, connect_once
from tfkfp.components.common.beam.handler import (
    NAMESPACE,
    KeyedTfkfpModelHandler,
    RowFailure,
    TfkfpModelHandler,
)
from tfkfp.components.common.beam.rows import RowEncoder, RowError, model_schema
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.endpoint.options import EndpointOptions
from tfkfp.components.common.model.version import answered_version
from tfkfp.components.stream_predict.options import StreamOptions, attributes_of

MAX_TEXT = 10_000  # characters of a bad message's text kept in its dead letter
MAX_ATTRIBUTE = 1024  # bytes Pub/Sub allows an attribute's value
PUBLISH_TIMEOUT_S = 300  # as Beam's own write waits for Pub/Sub to accept a bundle
# predicted and dead_lettered count rows answered in the job; the *_written two, locally,
# the messages Pub/Sub accepted on each topic
COUNTERS = ("messages", "rows", "predicted", "dead_lettered", "predictions_written",
            "dead_letters_written")

# The same counts in this process, for a local run to watch: asking the DirectRunner for
# its metrics while it runs stalled its Pub/Sub reads (one pull, then none for a minute)
_LOCAL = dict.fromkeys(COUNTERS, 0)
_LOCAL_LOCK = threading.Lock()


def local_counts(reset: bool = False) -> Dict[str, int]:
    """This process's counts since the last reset (a local run's own)."""
    with _LOCAL_LOCK:
        found = dict(_LOCAL)
        if reset:
            _LOCAL.update(dict.fromkeys(COUNTERS, 0))
        return found


def _count(name: str, amount: int = 1) -> None:
    Metrics.counter(NAMESPACE, name).inc(amount)
    with _LOCAL_LOCK:
        _LOCAL[name] += amount


def build(pipeline, options: StreamOptions, model_uri: str, id_label: str = "",
          local: bool = False, endpoint: EndpointOptions | None = None,
          columns: List[Column] | None = None) -> None:
    """The job's stages on a streaming Beam pipeline: the model in the job, or with
    ``endpoint`` the model behind it (``columns``: the features sent, when no model names
    them). ``local``: for Beam's DirectRunner (see ``_batching``)."""
    columns = columns or model_schema(model_uri).features
    batching = _batching(options, local)
    if endpoint is None:
        handler = KeyedTfkfpModelHandler(TfkfpModelHandler(model_uri, top_k=options.top_k,
                                                           **batching))
        answered_by = model_uri
    else:
        handler = KeyedTfkfpModelHandler(EndpointModelHandler(endpoint, columns, options.top_k,
                                                         **batching))
        answered_by = connect_once(endpoint).predict_url
    read = {"subscription": options.subscription, "with_attributes": True}
    if id_label:  # Dataflow de-duplicates on it; the DirectRunner refuses it
        read["id_label"] = id_label
    messages = pipeline | "Read" >> ReadFromPubSub(**read)
    if not local:  # the model stage scales apart from the read (on Dataflow; the local
        # runner then held every pull after its first)
        messages = messages | "Spread" >> beam.Reshuffle()
    rows = messages | "Rows" >> beam.ParDo(_Rows(columns, options.keys)).with_outputs(
        "dead", main="rows")
    answered, failed = (rows.rows | "Predict" >> RunInference(handler)
                        .with_exception_handling())
    out = answered | "Answer" >> beam.ParDo(_Answer(answered_by, endpoint is None)
                                           ).with_output_types(
        PubsubMessage).with_outputs("dead", main="predictions")
    lost = failed.failed_inferences | "FailedBatches" >> beam.FlatMap(
        _failed_batch).with_output_types(PubsubMessage)
    _ = out.predictions | "WritePredictions" >> _write(options.output_topic, local,
                                                       "predictions_written")
    _ = ((rows.dead, out.dead, lost) | "AllDead" >> beam.Flatten()
         | "WriteDeadLetters" >> _write(options.dead_letter_topic, local,
                                        "dead_letters_written"))


def _write(topic: str, local: bool, counter: str) -> beam.PTransform:
    """Beam's Pub/Sub write; locally one that counts a message once Pub/Sub accepted it."""
    if local:
        return beam.ParDo(_PublishCounted(topic, counter))
    return WriteToPubSub(topic, with_attributes=True)


class _PublishCounted(beam.DoFn):
    """What Beam's WriteToPubSub does on the DirectRunner (google-cloud-pubsub's publisher,
    each bundle's messages flushed as it ends), counting each message once Pub/Sub has
    accepted it. A local stop waits for these counts: the rows counted predicted were in
    the job, not yet on the topic, when the bundle that writes them had not run, and the
    cancel that follows a drain dropped them."""

    def __init__(self, topic: str, counter: str):
        self.topic, self.counter = topic, counter

    def setup(self):
        from google.cloud import pubsub_v1

        self.client = pubsub_v1.PublisherClient()

    def start_bundle(self):
        self.sent = []

    def process(self, message: PubsubMessage):
        self.sent.append(self.client.publish(self.topic, message.data,
                                             **(message.attributes or {})))

    def finish_bundle(self):
        for sent in self.sent:
            sent.result(timeout=PUBLISH_TIMEOUT_S)
        _count(self.counter, len(self.sent))
        self.sent = []


def _batching(options: StreamOptions, local: bool) -> Dict[str, Any]:
    """RunInference's batching. On a runner with a real clock, a batch waits up to
    max_batch_wait_s to fill (a stateful batch with a processing-time timer). Beam's
    DirectRunner fires that timer only when another bundle arrives, so the rows of the
    last pull before a quiet spell waited for the next message (rows left unfinished at
    a stop): locally a batch is a bundle's rows (a pull, up to 10 messages), flushed as
    the bundle ends."""
    wait = None if local else max(1, round(options.max_batch_wait_s))
    return {"max_batch_size": options.max_batch_size, "max_batch_duration_secs": wait}


class _Rows(beam.DoFn):
    """A message's rows, each encoded alone: ((message id, row, keys, attributes), row)."""

    def __init__(self, columns: List[Column], keys: List[str]):
        self.columns, self.keys = list(columns), list(keys)

    def setup(self):
        self.encoder = RowEncoder(self.columns)

    def process(self, message: PubsubMessage):
        _count("messages")
        attributes = attributes_of(dict(message.attributes or {}))
        try:
            body = json.loads(message.data)
        except ValueError as err:
            _count("rows")
            text = message.data[:MAX_TEXT].decode("utf-8", "replace")
            yield _dead(message.message_id, -1, f"the message is not JSON: {err}", text)
            return
        for place, row in enumerate(body if isinstance(body, list) else [body]):
            _count("rows")
            try:
                encoded = self.encoder.encode(row)
            except RowError as err:
                yield _dead(message.message_id, place, str(err), row)
                continue
            keys = tuple((k, row.get(k)) for k in self.keys)
            yield (message.message_id, place, keys, tuple(attributes.items())), encoded


class _Answer(beam.DoFn):
    """A prediction message per answered row, or a dead letter for a row the model failed.
    ``model``: the model's URI, or the endpoint's predict URL (whose answers name their
    version)."""

    def __init__(self, model: str, in_job: bool):
        self.model_uri, self.in_job = model, in_job

    def setup(self):
        version = answered_version(self.model_uri) if self.in_job else ""
        self.model = {"model": self.model_uri[-MAX_ATTRIBUTE:],
                      **({"model_version": version} if version else {})}

    def process(self, keyed):
        (message_id, place, keys, attributes), result = keyed
        if isinstance(result.inference, RowFailure):
            yield _dead(message_id, place, result.inference.reason, None)
            return
        _count("predicted")
        body = {**dict(keys), **result.inference.fields()}
        answered = {"model_version": result.inference.version[:MAX_ATTRIBUTE]} \
            if result.inference.version else {}
        yield PubsubMessage(json.dumps(body).encode(), {
            **dict(attributes), "message_id": message_id, "row": str(place), **self.model,
            **answered})


def _failed_batch(failure) -> List:
    """A batch RunInference gave up on: a dead letter for each of its rows."""
    batch, err = failure
    reason = f"prediction failed: {' '.join(str(err).split()) or type(err).__name__}"
    return [dead_letter(message_id, place, reason, None)
            for (message_id, place, _keys, _attributes), _row in batch]


def _dead(message_id: str, place: int, reason: str, row: Any):
    return beam.pvalue.TaggedOutput("dead", dead_letter(message_id, place, reason, row))


def dead_letter(message_id: str, place: int, reason: str, row: Any) -> PubsubMessage:
    """The dead letter of a row (place -1: the whole message), counted."""
    _count("dead_lettered")
    body: Dict[str, Any] = {"reason": reason, "message_id": message_id, "row": place}
    if row is not None:
        body["data"] = row
    attributes = {"message_id": message_id, "row": str(place),
                  "reason": reason.encode()[:MAX_ATTRIBUTE].decode("utf-8", "ignore")}
    return PubsubMessage(json.dumps(body, default=str).encode(), attributes)
