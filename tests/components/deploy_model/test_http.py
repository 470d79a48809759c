"""deploy_model's calls to an endpoint through the suite's HTTP client (common.endpoint):
the readiness wait of target existing, the smoke test's request and the gate's, against a
scripted server in the test: a model not ready yet is waited for, a 503 is retried until
the smoke test's wait is over, and each failure is named as before."""

import json
import threading

import pytest
from ports import free_port
from threaded_server import LoopbackServer, QuietHandler, answering

from tfkfp.components.deploy_model import endpoint_model, smoke
from tfkfp.components.deploy_model.core import deploy_model
from tfkfp.components.deploy_model.errors import DeployFailed, EndpointNotFound, SmokeTestFailed


class Scripted(LoopbackServer):
    """Answers each request with the next (status, body) of ``script``; the last repeats."""

    def __init__(self, *script):
        super().__init__(_Handler)
        self.script, self.seen, self.lock = list(script), [], threading.Lock()


class _Handler(QuietHandler):
    def do_GET(self):
        self._answer(None)

    def do_POST(self):
        self._answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def _answer(self, body):
        with self.server.lock:
            self.server.seen.append((self.command, self.path, body))
            script = self.server.script
            status, answer = script.pop(0) if len(script) > 1 else script[0]
        data = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_an_existing_endpoint_is_waited_for_until_its_model_is_ready():
    with answering(Scripted((503, "loading"), (200, {"ready": False}),
                            (200, {"ready": True}))) as server:
        done = deploy_model("/m", "existing", "digits", {"url": server.url + "/"})
    assert done.endpoint_url == server.url and len(server.seen) == 3
    assert server.seen[0][:2] == ("GET", "/v1/models/digits")


@pytest.mark.parametrize("script, last", [
    ([(404, "no such model")], "404 Not Found"),
    ([(200, {"ready": False})], "it answers, but the model is not ready"),
])
def test_an_endpoint_not_ready_in_time_is_named_with_what_it_said_last(script, last):
    with answering(Scripted(*script)) as server, pytest.raises(
            DeployFailed, match=rf"endpoint {server.url}/v1/models/digits did not report "
                                rf"model 'digits' ready within 1 s: {last}$"):
        deploy_model("/m", "existing", "digits", {"url": server.url, "deadline_seconds": 1})


def test_an_unreachable_existing_endpoint_names_the_error():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(DeployFailed, match=r"ready within 1 s: \[Errno 111\] Connection "
                                           r"refused"):
        deploy_model("/m", "existing", "digits", {"url": url, "deadline_seconds": 1})


def test_the_smoke_request_retries_503_and_returns_the_predictions():
    with answering(Scripted((503, "wiring routes"), (503, "wiring routes"),
                            (200, {"predictions": [{"class": "a"}]}))) as server:
        answers = smoke._post(server.url + "/v1/models/m:predict", {"instances": [{}]}, 10)
    assert answers == [{"class": "a"}] and len(server.seen) == 3
    assert server.seen[-1] == ("POST", "/v1/models/m:predict", {"instances": [{}]})


@pytest.mark.parametrize("script, message", [
    ([(503, "still wiring")], r"answered 503: still wiring$"),
    ([(400, "bad instances")], r"answered 400: bad instances$"),
    ([(200, {"other": 1})], r"answered without a predictions list: 'predictions'$"),
])
def test_a_smoke_request_that_fails_is_named(script, message):
    with answering(Scripted(*script)) as server, pytest.raises(SmokeTestFailed,
                                                               match=message):
        smoke._post(server.url + "/v1/models/m:predict", {"instances": []}, 1.5)
    tries = len(server.seen)
    assert tries >= 2 if script[0][0] == 503 else tries == 1  # 503s: once a second


def test_a_smoke_request_to_nothing_gives_up_after_its_wait():
    url = f"http://127.0.0.1:{free_port()}/v1/models/m:predict"
    with pytest.raises(SmokeTestFailed, match=r"did not answer within 1 s: \[Errno 111\]"):
        smoke._post(url, {"instances": []}, 1.0)


def test_the_gate_tells_a_missing_model_from_a_failing_endpoint():
    with answering(Scripted((404, "no"), (500, "broken"), (200, "not json"),
                            (200, {"ok": 1}))) as server:
        url = server.url + "/v1/models/m"
        with pytest.raises(EndpointNotFound):
            endpoint_model._request(url)
        with pytest.raises(DeployFailed, match=r"/v1/models/m answered 500: broken"):
            endpoint_model._request(url)
        with pytest.raises(DeployFailed, match="answered something other than JSON"):
            endpoint_model._request(url)
        assert endpoint_model._request(url + ":predict", b"{}") == {"ok": 1}
    assert [s[0] for s in server.seen] == ["GET", "GET", "GET", "POST"]
    with pytest.raises(DeployFailed, match=r"did not answer: \[Errno 111\]"):
        endpoint_model._request(f"http://127.0.0.1:{free_port()}/v1/models/m")
