"""batch_predict's endpoint mode against a small fake Open Inference Protocol server in the
test (it answers with the demo model, loaded here): shedding with 503 is retried and no row is
lost or doubled, a refused row becomes an error row, the bearer token and extra headers are
sent, and an unreachable endpoint is refused before any output exists."""

import collections
import http.server
import json
import os
import threading

import numpy as np
import pytest
from serve_process import free_port
from threaded_server import answering

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.options import EndpointOptions
from tfkfp.components.common.model.ranking import top_k_of


class FakeServer(http.server.ThreadingHTTPServer):
    """Answers ready, metadata and infer for ``model`` with ``predictor``; ``shed`` infer
    requests get 503 first; a batch holding the ``poison`` row gets 400."""

    daemon_threads = True

    def __init__(self, predictor, shed: int = 0, poison=None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.predictor, self.shed, self.poison = predictor, shed, poison
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
        self._answer(404, {"error": f"no route {self.path}"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server = self.server
        with server.lock:
            server.headers_seen.append(dict(self.headers))
            if server.shed:
                server.shed -= 1
                return self._answer(503, {"error": "overloaded"}, {"Retry-After": "0"})
        features = {i["name"]: np.array(i["data"], np.int64) for i in body["inputs"]}
        if server.poison is not None:
            rows = np.stack([features[n] for n in server.predictor.inputs], axis=1)
            if (rows == server.poison).all(axis=1).any():
                return self._answer(400, {"error": "this batch holds the poison row"})
        ids, scores = top_k_of(np.asarray(server.predictor.predict(features)), 1)
        with server.lock:
            server.rows_answered[len(ids)] += 1
        labels = server.predictor.labels
        self._answer(200, {"model_name": "digits", "model_version": "7", "outputs": [
            {"name": "class", "datatype": "BYTES", "shape": [len(ids)],
             "data": [labels[i] for i in ids[:, 0]]},
            {"name": "class_id", "datatype": "INT64", "shape": [len(ids)],
             "data": ids[:, 0].tolist()},
            {"name": "score", "datatype": "FP32", "shape": [len(ids)],
             "data": scores[:, 0].tolist()}]})

    def _answer(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.server.statuses[status] += 1
        self.send_response(status)
        for name, value in {"Content-Type": "application/json",
                            "Content-Length": str(len(data)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def serving(predictor, **kwargs):
    return answering(FakeServer(predictor, **kwargs))


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
