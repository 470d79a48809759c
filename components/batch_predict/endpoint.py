"""batch_predict's endpoint mode: the rows go to a model already serving them (``tfkfp
serve``, a KServe InferenceService, any server of the KServe v1 or Open Inference Protocol v2
REST API) instead of a model loaded in the step.

Before any work, ``connect`` refuses an endpoint that does not answer (naming its URL), a
model it does not serve, and a top_k it cannot answer. The columns sent are the model
artifact's features when one is given, else those the endpoint's metadata lists (v2
``GET /v2/models/NAME``; v1 ``GET /v1/models/NAME/metadata``, TF Serving's, which tfkfp
serve answers), else the data's schema's features (every column but the keys and label).

Each chunk the reader hands over is cut into mini-batches of ``batch_rows``, sent
``concurrency`` at a time (endpoint_client.py retries the transient failures). A mini-batch
the server refuses (400, 413, 422, 500) is halved, and halved again, until the rows at fault
are alone: each of those becomes an error row carrying the server's message, and the others
are predicted, as the in-step path does with rows the model fails on. So every input row
ends as one prediction row or one error row. The prediction rows have the in-step path's
columns, plus ``endpoint`` (the predict URL) and ``model_version`` (v2's ``model_version``
where the answer carries one, else the version the metadata named, else empty).
"""

import concurrent.futures
import dataclasses
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.batch_predict import writers
from tfkfp.components.batch_predict.endpoint_client import EndpointClient, bearer_token
from tfkfp.components.batch_predict.endpoint_protocols import PROTOCOLS, Answers, Served
from tfkfp.components.batch_predict.errors import EndpointError, PredictInputError, RowsRefused
from tfkfp.components.batch_predict.options import EndpointOptions, check_endpoint
from tfkfp.components.batch_predict.records import Chunk, ErrorRow
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.model.predictor import InputSpec, Predictor

ANSWERED_BY = ("endpoint", "model_version")  # the columns naming who answered a row


@dataclasses.dataclass
class Model:
    """What a model artifact given beside the endpoint says: its schema, class names and
    task (none of it loaded into a runtime)."""

    schema: Schema | None = None
    labels: List[str] | None = None
    task: str | None = None


def connect(options: EndpointOptions, model_uri: str = "", labels_uri: str = ""
            ) -> "Endpoint":
    """The endpoint, checked to answer, with what its metadata says; PredictInputError
    naming the URL when it cannot be used."""
    check_endpoint(options)
    try:
        token = bearer_token(options.token_file, options.token_env)
    except EndpointError as err:
        raise PredictInputError(str(err)) from None
    headers = {**options.headers, **({"Authorization": f"Bearer {token}"} if token else {})}
    client = EndpointClient(options.url, headers, options.retries, options.timeout_s)
    protocol = PROTOCOLS[options.protocol]
    _check_ready(client, protocol.ready_path(options.model), options)
    status, metadata = client.get(protocol.metadata_path(options.model))
    served = protocol.served(metadata) if status == 200 else Served(None, None, None, "")
    model = read_model(model_uri, labels_uri) if model_uri else Model()
    return Endpoint(options, client, protocol, served, model)


def _check_ready(client: EndpointClient, path: str, options: EndpointOptions) -> None:
    """The model answers ready; a server still loading it (503) is waited for as a request
    would be; a server that cannot be reached is refused at once."""
    for attempt in range(options.retries + 1):
        try:
            status, body = client.get(path)
        except OSError as err:
            raise PredictInputError(
                f"endpoint {client.url(path)} is unreachable ({type(err).__name__}: {err}); "
                "check endpoint_url (inside a cluster an InferenceService's "
                "status.address.url) and that the server is running") from None
        if status == 200:
            return
        if status not in (429, 502, 503, 504) or attempt == options.retries:
            raise PredictInputError(f"endpoint {client.url(path)} answered {status} "
                                    f"({str(body)[:200]}): model {options.model!r} is not "
                                    "ready there (check endpoint_model, endpoint_headers "
                                    "and the token)")
        client.sleep(min(15.0, 0.5 * 2 ** attempt))


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

    def sender(self, key_columns: List[Column], top_k: int) -> "Sender":
        return Sender(self, key_columns, top_k)

    def describe(self) -> Dict:
        return {"kind": "endpoint", "uri": self.predict_url, "url": self.options.url,
                "model": self.options.model, "protocol": self.options.protocol,
                "task": "regression" if self.regressor else "classification",
                "classes": len(self.model.labels or []), "columns_from": self.columns_from,
                "batch_rows": self.options.batch_rows,
                "concurrency": self.options.concurrency,
                "requests": self.client.requests - self.preflight_requests,
                "retries": self.client.retried}


def _specs(columns: List[Column]) -> Dict[str, InputSpec]:
    """The input each column feeds, typed as the model takes it (images decoded)."""
    from tfkfp.components.common.model.savedmodel import raw_dtype, raw_shape

    return {c.name: InputSpec("string" if c.dtype == "string" and not c.encoding
                              else raw_dtype(c).name, tuple(raw_shape(c))) for c in columns}


Span = Tuple[int, int, Answers]


class Sender:
    """Sends a chunk's rows in mini-batches, several in flight, and turns the answers into
    prediction rows and the refused rows into error rows."""

    def __init__(self, endpoint: Endpoint, key_columns: List[Column], top_k: int):
        self.endpoint, self.key_columns, self.top_k = endpoint, key_columns, top_k
        self.options, self.client = endpoint.options, endpoint.client
        self.pool = concurrent.futures.ThreadPoolExecutor(self.options.concurrency,
                                                          "tfkfp-endpoint")

    def predict(self, chunk: Chunk, path: str) -> Tuple[writers.Predictions, List[ErrorRow]]:
        size = self.options.batch_rows
        spans = list(self.pool.map(lambda lo: self._answered(chunk.features, lo, min(
            lo + size, chunk.rows)), range(0, chunk.rows, size)))
        good = [s for found, _ in spans for s in found]
        bad = [b for _, refused in spans for b in refused]
        errors = [ErrorRow(path, int(chunk.records[i]), -1, f"the endpoint refused the row: "
                           f"{reason}") for i, reason in bad]
        if not good:
            return self.empty(), errors
        keep = np.concatenate([np.arange(lo, hi) for lo, hi, _ in good])
        keys = {c.name: chunk.keys[c.name][keep] for c in self.key_columns}
        return self.predictions(keys, [a for _, _, a in good]), errors

    def _answered(self, features: Dict[str, np.ndarray], lo: int, hi: int
                  ) -> Tuple[List[Span], List[Tuple[int, str]]]:
        """The answered spans of rows [lo, hi), in order, and the refused rows alone."""
        body = self.endpoint.protocol.encode({n: v[lo:hi] for n, v in features.items()})
        try:
            answer = self.client.post(self.endpoint.protocol.predict_path(self.options.model),
                                      body)
            return [(lo, hi, self.endpoint.protocol.decode(answer, hi - lo))], []
        except RowsRefused as err:
            if hi - lo == 1:
                return [], [(lo, str(err))]
        mid = (lo + hi) // 2
        first, second = self._answered(features, lo, mid), self._answered(features, mid, hi)
        return first[0] + second[0], first[1] + second[1]

    def predictions(self, keys: Dict[str, np.ndarray], answers: List[Answers]
                    ) -> writers.Predictions:
        versions = np.array([a.version or self.endpoint.served.version for a in answers
                             for _ in range(a.rows)], dtype=object)
        extra = {"endpoint": np.full(len(versions), self.endpoint.predict_url, dtype=object),
                 "model_version": versions}
        if answers[0].values is not None or self.endpoint.regressor:
            return writers.Predictions(keys, self.key_columns, values=np.concatenate(
                [self._values(a) for a in answers]), extra=extra)
        classes = [row[:self.top_k] for a in answers for row in self._classes(a)]
        ids, labels = self._ids(np.concatenate([a.class_ids for a in answers]), classes)
        scores = np.concatenate([a.scores[:, :self.top_k] for a in answers])
        return writers.Predictions(keys, self.key_columns, ids, scores, labels, self.top_k,
                                   extra=extra)

    def _values(self, answers: Answers) -> np.ndarray:
        if answers.values is None:
            raise EndpointError(f"{self.endpoint.predict_url} answered classes; the model "
                                "was taken to be a regressor")
        return answers.values

    def _classes(self, answers: Answers) -> List[List[str]]:
        if answers.classes is None:
            raise EndpointError(f"{self.endpoint.predict_url} answered values; the model "
                                "was taken to be a classifier")
        listed = min(len(row) for row in answers.classes)
        if listed < self.top_k or answers.scores.shape[1] < self.top_k:
            raise EndpointError(f"{self.endpoint.predict_url} answers {listed} class(es) per "
                                f"row; top_k is {self.top_k}: serve with a larger top_k or "
                                "lower it")
        return answers.classes

    def _ids(self, first_ids: np.ndarray, classes: List[List[str]]
             ) -> Tuple[np.ndarray, List[str]]:
        """Class ids [rows, top_k] into a list of class names the writers look them up in.

        The model's labels, when its artifact was given. Else the answers name a row's best
        class with its id, but the others by name only: a table is built with every best
        class at its id and the other names after the largest id, so every name is written
        as answered; only the best class's id is written as an id.
        """
        labels = self.endpoint.model.labels
        table = {name: i for i, name in enumerate(labels)} if labels else \
            {row[0]: int(i) for row, i in zip(classes, first_ids)}
        for row in classes:
            for name in row:
                if name not in table:
                    if labels:
                        raise EndpointError(f"{self.endpoint.predict_url} answered class "
                                            f"{name!r}, which the model artifact's classes "
                                            f"{labels[:20]} do not have")
                    table[name] = max(table.values(), default=-1) + 1
        names = [""] * (max(table.values()) + 1)
        for name, i in table.items():
            names[i] = name
        ids = np.array([[table[name] for name in row] for row in classes], np.int64)
        return ids.reshape(len(classes), self.top_k), names

    def empty(self) -> writers.Predictions:
        keys = {c.name: np.zeros(0, dtype=object if c.dtype == "string" else c.dtype)
                for c in self.key_columns}
        extra = {name: np.zeros(0, dtype=object) for name in ANSWERED_BY}
        if self.endpoint.regressor:
            return writers.Predictions(keys, self.key_columns, values=np.zeros(0, np.float32),
                                       extra=extra)
        return writers.Predictions(keys, self.key_columns, np.zeros((0, self.top_k), np.int64),
                                   np.zeros((0, self.top_k), np.float32),
                                   self.endpoint.model.labels or [], self.top_k, extra=extra)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
