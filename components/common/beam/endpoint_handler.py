"""RunInference through a deployed model: each batch is one request to a serving endpoint
(``tfkfp serve``, KServe, any Open Inference Protocol or KServe v1 server, a Vertex AI
Endpoint), answered one ``RowPrediction`` per row as the in-job handler answers.

The endpoint is the suite's own client (common.endpoint): checked ready before the first
batch, transient failures retried with backoff, a bearer token or Google credentials sent.
An answer is tied to its request as the protocol allows (v2's request id, every protocol's
row count): an answer that is not its request's makes a ``RowFailure`` of each row, never
another row's prediction. A batch the server refuses (400, 413, 422, 500) is halved down
to the rows at fault, each a ``RowFailure`` carrying the server's message; the others are
predicted. An endpoint that cannot answer (retries spent, 401, 403, 404) fails each row of
the batch naming why, so a stream dead-letters those rows rather than stalling.

The connection is made once per worker process (a process-wide cache, as the in-job
handler's model); counters in the ``tfkfp`` namespace: ``endpoint_requests`` and
``endpoint_retries``.
"""

import threading
import uuid
from typing import Any, Dict, Iterable, List, Sequence

import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from tfkfp.components.common.beam.handler import NAMESPACE, RowFailure, RowPrediction
from tfkfp.components.common.beam.rows import stack_rows
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.endpoint.connection import Connection, open_endpoint
from tfkfp.components.common.endpoint.errors import EndpointError, RowsRefused
from tfkfp.components.common.endpoint.options import EndpointOptions
from tfkfp.components.common.endpoint.protocols import Answers, answered_by
from tfkfp.components.common.platform.halving import split_failures

_CONNECTIONS: Dict[str, Connection] = {}
_LOCK = threading.Lock()


def connect_once(options: EndpointOptions) -> Connection:
    """This process's connection to the endpoint (checked ready when first made)."""
    key = repr(options)  # the options hold a dict of headers: not hashable themselves
    with _LOCK:
        if key not in _CONNECTIONS:
            _CONNECTIONS[key] = open_endpoint(options)
        return _CONNECTIONS[key]


def endpoint_columns(options: EndpointOptions) -> List[Column]:
    """The columns the endpoint's metadata says its model takes; ValueError when it says
    none (give the model artifact, whose schema names them)."""
    connection = connect_once(options)
    if not connection.served.inputs:
        raise ValueError(f"endpoint {connection.predict_url}: its metadata lists no inputs; "
                         "give the model whose schema names the columns to send")
    return [Column(name, spec.dtype, spec.shape)
            for name, spec in connection.served.inputs.items()]


class EndpointModelHandler(ModelHandler[Dict[str, np.ndarray], Any, Connection]):
    """RunInference against a serving endpoint (one request a batch; ``max_batch_size``
    rows at most). ``columns``: the features sent, in order (the model's schema, or
    ``endpoint_columns``); ``top_k``: a classifier's best classes per row, as served."""

    def __init__(self, options: EndpointOptions, columns: List[Column], top_k: int = 1,
                 max_batch_size: int = 64, max_batch_duration_secs: int | None = None):
        super().__init__(min_batch_size=1, max_batch_size=max_batch_size,
                         max_batch_duration_secs=max_batch_duration_secs)
        self.options, self.columns, self.top_k = options, list(columns), top_k
        self._requests = Metrics.counter(NAMESPACE, "endpoint_requests")
        self._retries = Metrics.counter(NAMESPACE, "endpoint_retries")
        self._failed = Metrics.counter(NAMESPACE, "prediction_failures")

    def load_model(self) -> Connection:
        return connect_once(self.options)

    def run_inference(self, batch: Sequence[Dict[str, np.ndarray]], model: Connection,
                      inference_args: Dict[str, Any] | None = None
                      ) -> Iterable[PredictionResult]:
        client = model.client
        requests, retried = client.requests, client.retried
        answers = self._answers(list(batch), model)
        self._requests.inc(client.requests - requests)
        self._retries.inc(client.retried - retried)
        failed = sum(isinstance(a, RowFailure) for a in answers)
        if failed:
            self._failed.inc(failed)
        return [PredictionResult(row, answer, model.predict_url)
                for row, answer in zip(batch, answers)]

    def _answers(self, rows: List[Dict[str, np.ndarray]], model: Connection) -> List[Any]:
        """One answer per row: refused rows narrowed down by halving; an endpoint that
        cannot answer fails the rows of the request it could not answer."""
        answers: List[Any] = [None] * len(rows)

        def send(lo: int, hi: int) -> List[Any]:
            try:
                return self._request(rows[lo:hi], model)
            except EndpointError as err:  # not the rows' fault: no halving
                return [RowFailure(f"endpoint failed: {err}")] * (hi - lo)

        good, bad = split_failures(send, len(rows))
        for lo, _hi, found in good:
            answers[lo:lo + len(found)] = found
        for index, err in bad:
            why = err if isinstance(err, RowsRefused) else f"{type(err).__name__}: {err}"
            answers[index] = RowFailure(f"the endpoint refused the row: {why}")
        return answers

    def _request(self, rows: List[Dict[str, np.ndarray]], model: Connection) -> List[Any]:
        protocol, request_id = model.protocol, uuid.uuid4().hex
        features = stack_rows(rows, self.columns)
        body = model.client.post(model.predict_path, protocol.encode(features, request_id))
        problem = protocol.mismatch(body, len(rows), request_id)
        if problem:
            return [RowFailure(f"the endpoint's answer is not this request's: {problem}")
                    ] * len(rows)
        answers = protocol.decode(body, len(rows))
        vertex = protocol.name == "vertex" and isinstance(body, dict)
        version = answers.version or (answered_by(body) if vertex else "") or \
            model.served.version
        return _row_predictions(answers, version)

    def get_num_bytes(self, batch: Sequence[Dict[str, np.ndarray]]) -> int:
        return sum(getattr(v, "nbytes", 8) for row in batch for v in row.values())

    def get_metrics_namespace(self) -> str:
        return NAMESPACE


def _row_predictions(answers: Answers, version: str) -> List[RowPrediction]:
    """An answer's rows as RowPredictions (a classifier's first class id is answered; the
    others are named only)."""
    if answers.values is not None:
        return [RowPrediction(value=float(v), version=version) for v in answers.values]
    return [RowPrediction((int(first),), tuple(names), tuple(float(s) for s in scores),
                          version=version)
            for first, names, scores in zip(answers.class_ids, answers.classes,
                                            answers.scores)]
