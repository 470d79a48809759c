"""batch_predict's endpoint mode against a small fake Open Inference Protocol (and KServe
v1) server in the test (it answers with the demo model, loaded here): shedding with 503 is
retried and no row is lost or doubled, a refused row becomes an error row, an answer that is
not its request's (crossed, a row short, another id) makes error rows, not predictions; a
slow endpoint fails in seconds naming endpoint_timeout_s and is logged while it is waited
on; the bearer token and extra headers are sent, and an unreachable endpoint is refused
before any output exists."""

import collections
import contextlib
import http.server
import json
import logging
import os
import re
import threading
import time
import uuid

import numpy as np
import pytest
from serve_process import free_port
from threaded_server import answering, send_json

from tfkfp.components.batch_predict import endpoint_sender
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import EndpointError, PredictInputError
from tfkfp.components.batch_predict.options import EndpointOptions, endpoint_options
from tfkfp.components.common.model.ranking import top_k_of


class FakeServer(http.server.ThreadingHTTPServer):
    """Answers ready, metadata and infer (v2; v1 predict) for ``model`` with ``predictor``,
    returning a v2 request's id as KServe and tfkfp serve do; ``shed`` infer requests get
    503 first; a batch holding the ``poison`` row gets 400; ``alter(answer, request)`` is
    what a faulty server sends instead of the answer; each answer waits ``delay_s`` (or
    until the test ends)."""

    daemon_threads = True

    def __init__(self, predictor, shed: int = 0, poison=None, alter=None,
                 delay_s: float = 0.0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.predictor, self.shed, self.poison = predictor, shed, poison
        self.alter, self.delay_s, self.released = alter, delay_s, threading.Event()
        self.lock = threading.Lock()
        self.headers_seen = []
        self.rows_answered = collections.Counter()  # infer requests answered 200, by size
        self.statuses = collections.Counter()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.headers_seen.append(dict(self.headers))
        if self.path == "/v2/models/digits/ready":
            return self._answer(200, {"name": "digits", "ready": True})
        if self.path == "/v2/models/digits":
            inputs = [{"name": n, "datatype": "INT64", "shape": [-1]}
                      for n in self.server.predictor.inputs]
            return self._answer(200, {"name": "digits", "versions": ["7"], "inputs": inputs})
        if self.path == "/v1/models/digits":
            return self._answer(200, {"name": "digits", "ready": True})
        self._answer(404, {"error": f"no route {self.path}"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server = self.server
        with server.lock:
            server.headers_seen.append(dict(self.headers))
            if server.shed:
                server.shed -= 1
                return self._answer(503, {"error": "overloaded"}, {"Retry-After": "0"})
        features = _features(body, server.predictor.inputs)
        if server.poison is not None:
            rows = np.stack([features[n] for n in server.predictor.inputs], axis=1)
            if (rows == server.poison).all(axis=1).any():
                return self._answer(400, {"error": "this batch holds the poison row"})
        ids, scores = top_k_of(np.asarray(server.predictor.predict(features)), 1)
        answer = (_v1 if "instances" in body else _v2)(body, server.predictor.labels,
                                                      ids[:, 0], scores[:, 0])
        if server.delay_s:
            server.released.wait(server.delay_s)
        with server.lock:
            server.rows_answered[len(ids)] += 1
            if server.alter is not None:
                answer = server.alter(answer, body)
        self._answer(200, answer)

    def _answer(self, status, body, headers=None):
        self.server.statuses[status] += 1
        send_json(self, status, body, headers)


def _features(body, names):
    if "instances" in body:
        return {n: np.array([row[n] for row in body["instances"]], np.int64) for n in names}
    return {i["name"]: np.array(i["data"], np.int64) for i in body["inputs"]}


def _v2(request, labels, ids, scores):
    return {"id": request.get("id") or str(uuid.uuid4()), "model_name": "digits",
            "model_version": "7", "outputs": [
                {"name": "class", "datatype": "BYTES", "shape": [len(ids)],
                 "data": [labels[i] for i in ids]},
                {"name": "class_id", "datatype": "INT64", "shape": [len(ids)],
                 "data": ids.tolist()},
                {"name": "score", "datatype": "FP32", "shape": [len(ids)],
                 "data": scores.tolist()}]}


def _v1(request, labels, ids, scores):
    return {"predictions": [{"class": labels[i], "class_id": int(i), "score": float(s)}
                            for i, s in zip(ids, scores)]}


@contextlib.contextmanager
def serving(predictor, **kwargs):
    with answering(FakeServer(predictor, **kwargs)) as server:
        try:
            yield server
        finally:
            server.released.set()  # a delayed answer stops waiting


def options(url: str, **kwargs) -> EndpointOptions:
    return EndpointOptions(url, "digits", batch_rows=50, concurrency=3, **kwargs)


@pytest.fixture(scope="module")
def in_step(demo_dataset, predictor, tmp_path_factory):
    """The in-step path's rows, by id."""
    out = tmp_path_factory.mktemp("in_step")
    batch_predict("demo", demo_dataset, str(out), predictor=predictor)
    return {r["id"]: r for path in sorted(out.glob("predictions-*.jsonl"))
            for r in map(json.loads, open(path))}


def test_shedding_is_retried_and_no_row_is_lost_or_doubled(demo_dataset, predictor, in_step,
                                                           tmp_path, read_outputs):
    with serving(predictor, shed=7) as server:
        result = batch_predict("", demo_dataset, str(tmp_path), endpoint=options(server.url))
    rows = read_outputs(str(tmp_path))
    assert server.statuses[503] == 7 and result.model["retries"] == 7
    assert sorted(r["id"] for r in rows) == sorted(in_step)  # each row once
    assert (result.path, result.inputs, result.predictions, result.errors) == \
        ("endpoint", len(in_step), len(in_step), 0)
    assert sum(n * count for n, count in server.rows_answered.items()) == len(in_step)
    for row in rows:
        want = in_step[row["id"]]
        assert (row["class"], row["class_id"]) == (want["class"], want["class_id"])
        assert row["score"] == pytest.approx(want["score"], abs=1e-5)
        assert (row["endpoint"], row["model_version"]) == (
            f"{server.url}/v2/models/digits/infer", "7")
    assert result.model["columns_from"] == "endpoint metadata"


def test_a_refused_row_is_an_error_row_and_its_batch_is_predicted(
        demo_dataset, predictor, in_step, tmp_path, read_outputs):
    from tfkfp.components.common.data.reader import make_dataset

    first, _ = next(iter(make_dataset(demo_dataset, batch_size=1, shuffle=False)))
    poison = np.array([int(first[n].numpy()[0]) for n in predictor.inputs])
    with serving(predictor, poison=poison) as server:
        result = batch_predict("", demo_dataset, str(tmp_path), endpoint=options(server.url),
                               max_error_fraction=1.0)
    errors = read_outputs(str(tmp_path), kind="errors")
    assert len(errors) == result.errors >= 1
    assert all("the endpoint refused the row: 400: this batch holds the poison row"
               in e["reason"] for e in errors)
    assert result.predictions + result.errors == result.inputs == len(in_step)
    predicted = [r["id"] for r in read_outputs(str(tmp_path))]
    assert len(set(predicted)) == len(predicted) == result.predictions


def crossed():
    """Each request answered with the answer made for the one before it (the first with
    its own): answers out of order, as a proxy mixing up its connections sends them."""
    made = []

    def alter(answer, request):
        made.append(answer)
        return made[-2] if len(made) > 1 else answer
    return alter


def test_answers_out_of_order_are_error_rows_not_other_rows_predictions(
        demo_dataset, predictor, in_step, tmp_path, read_outputs):
    with serving(predictor, alter=crossed()) as server:
        result = batch_predict("", demo_dataset, str(tmp_path), endpoint=options(server.url),
                               max_error_fraction=1.0)
    rows, errors = read_outputs(str(tmp_path)), read_outputs(str(tmp_path), kind="errors")
    assert (result.predictions, result.errors) == (len(rows), len(errors))
    assert result.predictions + result.errors == result.inputs == len(in_step)
    assert 0 < result.predictions <= 50  # the first request alone got its own answer
    assert result.model["mismatched"] == result.model["requests"] - 1 >= 1
    for row in rows:  # what was written is the row's own prediction
        assert (row["class"], row["class_id"]) == (in_step[row["id"]]["class"],
                                                   in_step[row["id"]]["class_id"])
        assert row["score"] == pytest.approx(in_step[row["id"]]["score"], abs=1e-5)
    assert all(re.search(r"does not match request tfkfp-\w+-\d+ of \d+ row\(s\): the "
                         r"answer's id is 'tfkfp-\w+-\d+', not the request's", e["reason"])
               for e in errors)


def drop_row(answer, request):
    """The answer one row short (the last row's outputs left out)."""
    if "predictions" in answer:
        return {**answer, "predictions": answer["predictions"][:-1]}
    return {**answer, "outputs": [{**o, "shape": [o["shape"][0] - 1], "data": o["data"][:-1]}
                                  for o in answer["outputs"]]}


def drop_value(answer, request):
    """The class output one value short, its shape still naming every row."""
    outputs = [{**o, "data": o["data"][:-1]} if o["name"] == "class" else o
               for o in answer["outputs"]]
    return {**answer, "outputs": outputs}


def other_id(answer, request):
    return {**answer, "id": "another-server-1"}


@pytest.mark.parametrize("protocol, alter, message", [
    ("v2", drop_row, r"output 'class' has shape \[(?P<got>\d+)\] for the (?P<sent>\d+) rows "
                     "sent"),
    ("v2", drop_value, r"output 'class' holds (?P<got>\d+) values; its shape \[\d+\] says "
                       r"(?P<sent>\d+)"),
    ("v1", drop_row, r"(?P<got>\d+) predictions answered for the (?P<sent>\d+) rows sent"),
    ("v2", other_id, r"the answer's id is 'another-server-1', not the request's 'tfkfp-"),
], ids=["v2-row-short", "v2-value-short", "v1-row-short", "v2-another-id"])
def test_an_answer_that_is_not_its_requests_makes_error_rows(
        protocol, alter, message, demo_dataset, predictor, in_step, tmp_path, read_outputs):
    with serving(predictor, alter=alter) as server:
        result = batch_predict("", demo_dataset, str(tmp_path), max_error_fraction=1.0,
                               endpoint=options(server.url, protocol=protocol))
    errors = read_outputs(str(tmp_path), kind="errors")
    assert (result.predictions, result.errors, len(errors)) == (0, len(in_step), len(in_step))
    assert result.model["mismatched"] == result.model["requests"] >= 1
    for error in errors:
        found = re.search(message, error["reason"])
        assert found, error["reason"]
        if "got" in found.groupdict():
            assert int(found["got"]) == int(found["sent"]) - 1, error["reason"]


def test_a_slow_endpoint_fails_in_seconds_naming_the_timeout_and_is_logged_meanwhile(
        demo_dataset, predictor, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(endpoint_sender, "PROGRESS_EVERY_S", 0.2)
    caplog.set_level(logging.INFO, logger="tfkfp")
    started = time.monotonic()
    with serving(predictor, delay_s=60) as server, pytest.raises(EndpointError, match=(
            r"/v2/models/digits/infer did not answer within 0.5 s \(endpoint_timeout_s\); "
            r"gave up after 2 attempts \(endpoint_retries 1\)")):
        batch_predict("", demo_dataset, str(tmp_path / "out"),
                      endpoint=options(server.url, retries=1, timeout_s=0.5))
    assert time.monotonic() - started < 15
    waiting = [r.getMessage() for r in caplog.records if "waiting on" in r.getMessage()]
    assert waiting and re.search(
        r"endpoint http://127.0.0.1:\d+/v2/models/digits/infer: 0 rows answered, 0 rows/s; "
        r"waiting on [1-3] request\(s\), the oldest for \d+\.\d s", waiting[0]), waiting


def test_a_slow_endpoint_that_answers_is_logged_while_waited_on(
        demo_dataset, predictor, in_step, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(endpoint_sender, "PROGRESS_EVERY_S", 0.1)
    caplog.set_level(logging.INFO, logger="tfkfp")
    with serving(predictor, delay_s=0.2) as server:
        result = batch_predict("", demo_dataset, str(tmp_path), endpoint=options(server.url))
    assert (result.predictions, result.errors) == (len(in_step), 0)
    answered = [int(found[1]) for r in caplog.records
                if (found := re.search(r": (\d+) rows answered, .* waiting on", r.getMessage()))]
    assert len(answered) >= 2 and answered == sorted(answered) and answered[-1] > 0


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("nan"), float("inf")])
def test_a_request_timeout_not_above_0_is_refused(timeout_s, demo_dataset, tmp_path):
    with pytest.raises(PredictInputError, match=f"endpoint_timeout_s {timeout_s} must be a "
                                                "number of seconds above 0"):
        endpoint_options("http://127.0.0.1:1", endpoint_timeout_s=timeout_s)
    with pytest.raises(PredictInputError, match="endpoint_timeout_s"):
        batch_predict("", demo_dataset, str(tmp_path / "out"), endpoint=EndpointOptions(
            "http://127.0.0.1:1", "digits", timeout_s=timeout_s))
    assert not (tmp_path / "out").exists()
    assert endpoint_options("http://127.0.0.1:1", endpoint_timeout_s=0.5).timeout_s == 0.5


def test_the_pipeline_refuses_a_request_timeout_or_retries_that_cannot_work():
    from tfkfp.pipelines.batch_prediction import check_arguments

    given = {"model_uri": "m", "dataset_uri": "d", "endpoint_url": "http://127.0.0.1:1"}
    for change, message in [({"endpoint_timeout_s": 0}, "endpoint_timeout_s 0 must be"),
                            ({"endpoint_retries": -1}, "endpoint_retries -1 is below 0")]:
        with pytest.raises(ValueError, match=f"{message}.*\\(step batch_predict\\)"):
            check_arguments({**given, **change})
    check_arguments({**given, "endpoint_timeout_s": 0.5, "endpoint_retries": 0})


def test_the_token_and_headers_are_sent(demo_dataset, predictor, tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    with serving(predictor) as server:
        batch_predict("", demo_dataset, str(tmp_path / "out"), endpoint=options(
            server.url, headers={"Host": "digits.models.example.com"},
            token_file=str(token)))
        monkeypatch.setenv("DIGITS_TOKEN", "from-env")
        batch_predict("", demo_dataset, str(tmp_path / "env"),
                      endpoint=options(server.url, token_env="DIGITS_TOKEN"))
    by_token = collections.Counter(h.get("Authorization") for h in server.headers_seen)
    assert set(by_token) == {"Bearer s3cret-token", "Bearer from-env"}
    with_file = [h for h in server.headers_seen
                 if h.get("Authorization") == "Bearer s3cret-token"]
    assert {h["Host"] for h in with_file} == {"digits.models.example.com"}


def test_an_unreachable_endpoint_is_refused_before_any_output(demo_dataset, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    out = tmp_path / "out"
    with pytest.raises(PredictInputError, match=f"endpoint {url}/v2/models/digits/ready is "
                                                "unreachable"):
        batch_predict("", demo_dataset, str(out), endpoint=options(url))
    assert not out.exists()


def test_a_model_the_endpoint_does_not_serve_is_refused(demo_dataset, predictor, tmp_path):
    with serving(predictor) as server, pytest.raises(PredictInputError, match="answered 404"):
        batch_predict("", demo_dataset, str(tmp_path / "out"),
                      endpoint=EndpointOptions(server.url, "other"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("change, message", [
    ({"url": "digits:8080"}, "expected an http:// or https:// base URL"),
    ({"protocol": "v3"}, "endpoint_protocol 'v3' is not one of"),
    ({"batch_rows": 0}, "endpoint_batch_rows 0 is below 1"),
    ({"headers": {"authorization": "Bearer x"}}, "a credential in a pipeline parameter"),
    ({"token_file": "/t", "token_env": "T"}, "both set"),
])
def test_options_that_cannot_work_are_refused(change, message, demo_dataset, tmp_path):
    fields = {"url": "http://127.0.0.1:1", "model": "digits", **change}
    with pytest.raises(PredictInputError, match=message):
        batch_predict("", demo_dataset, str(tmp_path / "out"), endpoint=EndpointOptions(**fields))
    assert not os.path.exists(tmp_path / "out")
