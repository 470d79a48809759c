"""The Beam handler that predicts through a serving endpoint, against a scripted HTTP server
speaking the Open Inference Protocol and KServe v1: one request a batch, answers in the
in-job handler's fields, a refused row narrowed down to itself, an answer that is not its
request's never given to its rows, an endpoint that cannot answer failing its rows by name,
and RunInference in a real Beam pipeline."""

import contextlib
import json
import threading

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference
from apache_beam.testing.util import assert_that, equal_to
from threaded_server import LoopbackServer, QuietHandler, answering, send_json

from tfkfp.components.common.beam.endpoint_handler import (
    EndpointModelHandler,
    connect_once,
    endpoint_columns,
)
from tfkfp.components.common.beam.handler import KeyedTfkfpModelHandler, RowFailure
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.endpoint.errors import EndpointInputError
from tfkfp.components.common.endpoint.options import EndpointOptions

COLUMNS = [Column("x", "float32", ()), Column("colour", "string", ())]
POISON = 13.0  # a row the server refuses (400), as a model failing on one input would


class Scripted(LoopbackServer):
    """A server for model ``m``: class ``big`` (id 1) when x > 0, else ``small`` (id 0),
    score |x| / 100; ``answer_fault`` alters an answer; ``down`` answers 503 to every
    predict."""

    def __init__(self):
        super().__init__(_Handler)
        self.requests, self.answer_fault, self.down = [], None, False
        self.lock = threading.Lock()


class _Handler(QuietHandler):
    def do_GET(self):
        if self.path == "/v2/models/m/ready":
            return send_json(self, 200, {"name": "m", "ready": True})
        if self.path == "/v2/models/m":
            return send_json(self, 200, {"name": "m", "versions": ["3"], "inputs": [
                {"name": "x", "datatype": "FP32", "shape": [-1]},
                {"name": "colour", "datatype": "BYTES", "shape": [-1]}]})
        if self.path == "/v1/models/m":
            return send_json(self, 200, {"name": "m", "ready": True})
        send_json(self, 404, {"error": self.path})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(body)
        if self.server.down:
            return send_json(self, 503, {"error": "restarting"}, {"Retry-After": "0"})
        v2 = "inputs" in body
        xs = next(i["data"] for i in body["inputs"] if i["name"] == "x") if v2 else \
            [row["x"] for row in body["instances"]]
        if POISON in xs:
            return send_json(self, 400, {"error": f"x {POISON} is out of range"})
        ids = [1 if x > 0 else 0 for x in xs]
        names, scores = [["small", "big"][i] for i in ids], [abs(x) / 100 for x in xs]
        if v2:
            answer = {"id": body["id"], "model_name": "m", "model_version": "3", "outputs": [
                {"name": "class", "datatype": "BYTES", "shape": [len(xs)], "data": names},
                {"name": "class_id", "datatype": "INT64", "shape": [len(xs)], "data": ids},
                {"name": "score", "datatype": "FP32", "shape": [len(xs)], "data": scores}]}
        else:
            answer = {"predictions": [{"class": n, "class_id": i, "score": s}
                                      for n, i, s in zip(names, ids, scores)]}
        fault = self.server.answer_fault
        send_json(self, 200, fault(answer) if fault else answer)


@contextlib.contextmanager
def scripted():
    with answering(Scripted()) as server:
        yield server


def row(x, colour="red"):
    return {"x": np.float32(x), "colour": np.array(colour.encode(), object)}


def answers(server, xs, protocol="v2", **options):
    handler = EndpointModelHandler(
        EndpointOptions(server.url, "m", protocol, retries=options.pop("retries", 2),
                        **options), COLUMNS, max_batch_size=64)
    results = handler.run_inference([row(x) for x in xs], handler.load_model())
    return [r.inference for r in results]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_a_batch_is_one_request_answered_in_the_in_job_fields(protocol):
    with scripted() as server:
        got = answers(server, [5.0, -7.0, 0.5], protocol)
    assert len(server.requests) == 1
    assert [a.fields() for a in got] == [
        {"class": "big", "class_id": 1, "score": pytest.approx(0.05)},
        {"class": "small", "class_id": 0, "score": pytest.approx(0.07)},
        {"class": "big", "class_id": 1, "score": pytest.approx(0.005)}]
    assert {a.version for a in got} == {"3" if protocol == "v2" else ""}


def test_a_refused_row_alone_fails_and_the_rest_of_its_batch_is_predicted():
    with scripted() as server:
        got = answers(server, [1.0, 2.0, POISON, 4.0, -5.0, 6.0, 7.0, 8.0])
    failed = [i for i, a in enumerate(got) if isinstance(a, RowFailure)]
    assert failed == [2]
    assert got[2].reason == f"the endpoint refused the row: 400: x {POISON} is out of range"
    assert [a.classes[0] for i, a in enumerate(got) if i != 2] == \
        ["big", "big", "big", "small", "big", "big", "big"]
    assert len(server.requests) < 8  # halved, not one request a row


@pytest.mark.parametrize("fault,why", [
    (lambda a: {**a, "id": "another"}, "the answer's id is 'another'"),
    (lambda a: {**a, "outputs": [{**o, "shape": [2], "data": o["data"][:2]}
                                 for o in a["outputs"]]}, "has shape [2] for the 3 rows"),
])
def test_an_answer_that_is_not_its_requests_gives_no_row_a_prediction(fault, why):
    with scripted() as server:
        server.answer_fault = fault
        got = answers(server, [1.0, 2.0, 3.0])
    assert all(isinstance(a, RowFailure) for a in got)
    assert {a.reason.split(":")[0] for a in got} == {"the endpoint's answer is not this "
                                                     "request's"}
    assert all(why in a.reason for a in got)


def test_an_endpoint_that_cannot_answer_fails_its_rows_naming_why_without_halving():
    with scripted() as server:
        handler = EndpointModelHandler(EndpointOptions(server.url, "m", retries=1),
                                       COLUMNS)
        connection = handler.load_model()
        server.down = True
        got = handler.run_inference([row(x) for x in (1.0, 2.0, 3.0, 4.0)], connection)
    assert len(server.requests) == 2  # one request and its one retry
    reasons = {r.inference.reason for r in got}
    assert len(reasons) == 1 and "answered 503" in reasons.pop()
    assert connection.client.retried >= 1


def test_an_endpoint_that_does_not_answer_is_refused_naming_it():
    with scripted() as server:
        url = server.url
    with pytest.raises(EndpointInputError, match=f"endpoint {url}/v2/models/m/ready is "
                       "unreachable"):
        connect_once(EndpointOptions(url, "m", retries=0))


def test_the_columns_come_from_the_endpoints_metadata():
    with scripted() as server:
        assert endpoint_columns(EndpointOptions(server.url, "m")) == [
            Column("x", "float32", ()), Column("colour", "string", ())]


def test_run_inference_in_a_beam_pipeline_keeps_each_key_with_its_answer():
    with scripted() as server:
        handler = KeyedTfkfpModelHandler(EndpointModelHandler(
            EndpointOptions(server.url, "m"), COLUMNS, max_batch_size=4))
        keyed = [(f"k{i}", row(x)) for i, x in enumerate([3.0, -1.0, POISON, 9.0, -2.0])]
        with beam.Pipeline() as pipeline:
            got = (pipeline | beam.Create(keyed) | RunInference(handler)
                   | beam.MapTuple(lambda key, result: (key, getattr(
                       result.inference, "classes", ("failed",))[0])))
            assert_that(got, equal_to([("k0", "big"), ("k1", "small"), ("k2", "failed"),
                                       ("k3", "big"), ("k4", "small")]))
