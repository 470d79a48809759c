"""batch_predict's endpoint mode: the rows go to a model already serving them (``tfkfp
serve``, a KServe InferenceService, any server of the KServe v1 or Open Inference Protocol v2
REST API, a Vertex AI Endpoint) instead of a model loaded in the step.

Before any work, ``connect`` refuses an endpoint that does not answer (naming its URL), a
model it does not serve, and a top_k it cannot answer. The columns sent are the model
artifact's features when one is given, else those the endpoint's metadata lists (v2
``GET /v2/models/NAME``; v1 ``GET /v1/models/NAME/metadata``, TF Serving's, which tfkfp
serve answers), else the data's schema's features (every column but the keys and label).

Each chunk the reader hands over is cut into mini-batches of ``batch_rows``, sent
``concurrency`` at a time (common.endpoint.client retries the transient failures). Where the
protocol caps a request's bytes (Vertex AI: 1.5 MB), a larger mini-batch is cut into parts
under the cap before it is sent; a single row over it becomes an error row naming its size.
A mini-batch the server refuses (400, 413, 422, 500) is halved, and halved again, until the
rows at fault are alone: each of those becomes an error row carrying the server's message,
and the others are predicted, as the in-step path does with rows the model fails on. An
answer that is not its request's (v2: another request's ``id``; any protocol: another
number of rows than were sent) makes each of its rows an error row naming what did not
match (endpoint_sender.py). So every input row ends as one prediction row or one error row,
never as an answer to another request (rows reordered within one answer cannot be told:
common.endpoint.protocols says why). A request waits ``endpoint_timeout_s`` per read
before it counts as a lost attempt; while requests are in flight a progress line every few
seconds names the rows answered and how long the oldest request has waited.

The prediction rows have the in-step path's columns, plus ``endpoint`` (the predict URL)
and ``model_version`` (v2's ``model_version`` where the answer carries one, else the
version the metadata named; for Vertex the answer's ``MODEL@VERSION, deployedModelId ID``;
else empty).
"""

import dataclasses
from typing import Dict, List

from tfkfp.components.batch_predict.endpoint_sender import Sender
from tfkfp.components.batch_predict.errors import PredictInputError, endpoint_errors
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.endpoint.client import EndpointClient
from tfkfp.components.common.endpoint.connection import open_endpoint
from tfkfp.components.common.endpoint.options import EndpointOptions
from tfkfp.components.common.endpoint.protocols import Served
from tfkfp.components.common.model.predictor import InputSpec, Predictor


@dataclasses.dataclass
class Model:
    """What a model artifact given beside the endpoint says: its schema, class names and
    task (none of it loaded into a runtime)."""

    schema: Schema | None = None
    labels: List[str] | None = None
    task: str | None = None


def connect(options: EndpointOptions, model_uri: str = "", labels_uri: str = "",
            credentials=None) -> "Endpoint":
    """The endpoint, checked to answer, with what its metadata says; PredictInputError
    naming the URL when it cannot be used. ``credentials``: Google credentials for a Vertex
    AI Endpoint (None: google.auth.default()'s)."""
    with endpoint_errors():
        connection = open_endpoint(options, credentials)
    model = read_model(model_uri, labels_uri) if model_uri else Model()
    return Endpoint(options, connection.client, connection.protocol, connection.served, model)


def read_model(model_uri: str, labels_uri: str = "") -> Model:
    """The schema, class names and task a SavedModel or TFLite bundle carries."""
    from tfkfp.components.common.model import savedmodel
    from tfkfp.components.common.model.bundle import SAVEDMODEL, TFLITE, Bundle, kind_of
    from tfkfp.components.common.platform import uris

    kind = kind_of(model_uri) if uris.exists(model_uri) else ""
    if kind == SAVEDMODEL:
        task = savedmodel.model_task(model_uri)
        labels = savedmodel.load_labels(model_uri) if task == "classification" else None
        return Model(savedmodel.load_schema(model_uri), labels, task)
    if kind == TFLITE:
        bundle = Bundle(model_uri)
        return Model(bundle.schema(), bundle.labels(labels_uri), bundle.task())
    raise PredictInputError(f"model {model_uri}: expected a tfkfp SavedModel or TFLite bundle "
                            "directory (its schema names the columns to send), or no model "
                            "in endpoint mode")


class Endpoint:
    """A connected endpoint: the columns it takes, and ``sender`` for the rows."""

    def __init__(self, options: EndpointOptions, client: EndpointClient, protocol,
                 served: Served, model: Model):
        self.options, self.client, self.protocol = options, client, protocol
        self.served, self.model = served, model
        self.predict_url = client.url(protocol.predict_path(options.model))
        self.preflight_requests = client.requests
        self.regressor = model.task == "regression" if model.task else served.regressor
        self.columns_from = ""
        self.senders: List[Sender] = []

    @property
    def schema(self) -> Schema | None:
        return self.model.schema

    def stand_in(self, data: Schema, top_k: int) -> Predictor:
        """The model's inputs and classes as a Predictor (which batch_predict's column plan
        checks the data against); it predicts nothing here."""
        inputs = self._inputs(data)
        self._check_top_k(top_k)
        task = "regression" if self.regressor else "classification"

        def remote_only(features):
            raise RuntimeError(f"the model is at {self.predict_url}; it is not loaded here")

        return Predictor("endpoint", self.predict_url, inputs, self.model.labels or [],
                         remote_only, self.model.schema, task=task)

    def _inputs(self, data: Schema) -> Dict[str, InputSpec]:
        if self.model.schema is not None:
            self.columns_from = "model"
            return _specs(self.model.schema.features)
        if self.served.inputs:
            self.columns_from = "endpoint metadata"
            return dict(self.served.inputs)
        self.columns_from = "data schema"
        return _specs(data.features)

    def _check_top_k(self, top_k: int) -> None:
        if self.regressor and top_k > 1:
            raise PredictInputError(f"top_k {top_k}: the model at {self.predict_url} is a "
                                    "regressor, which predicts one value per row")
        labels, listed = self.model.labels, self.served.top_k
        if labels and top_k > len(labels):
            raise PredictInputError(f"top_k {top_k} is more than the model's {len(labels)} "
                                    "classes")
        if listed is not None and top_k > listed:
            raise PredictInputError(f"top_k {top_k}: the endpoint {self.predict_url} answers "
                                    f"{listed} class(es) per row; serve with a larger top_k "
                                    f"(tfkfp serve --top-k {top_k}) or lower top_k")

    def sender(self, key_columns: List[Column], top_k: int) -> Sender:
        sender = Sender(self, key_columns, top_k)
        self.senders.append(sender)  # describe() counts their mismatched answers
        return sender

    def describe(self) -> Dict:
        return {"kind": "endpoint", "uri": self.predict_url, "url": self.options.url,
                "model": self.options.model, "protocol": self.options.protocol,
                "task": "regression" if self.regressor else "classification",
                "classes": len(self.model.labels or []), "columns_from": self.columns_from,
                "batch_rows": self.options.batch_rows,
                "concurrency": self.options.concurrency,
                "timeout_s": self.options.timeout_s,
                "requests": self.client.requests - self.preflight_requests,
                "retries": self.client.retried,
                "mismatched": sum(s.mismatched for s in self.senders)}


def _specs(columns: List[Column]) -> Dict[str, InputSpec]:
    """The input each column feeds, typed as the model takes it (images decoded)."""
    from tfkfp.components.common.model.savedmodel import raw_dtype, raw_shape

    return {c.name: InputSpec("string" if c.dtype == "string" and not c.encoding
                              else raw_dtype(c).name, tuple(raw_shape(c))) for c in columns}
