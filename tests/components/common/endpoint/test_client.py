"""The suite's HTTP client (common.endpoint.client, its retries urllib3's Retry with the
suite's schedule: common.endpoint.backoff) against a small server in the test: the waits
double from 0.5 s, a server's Retry-After is honoured up to 15 s, a refused request is not
retried, and what is given up names why, as before the client was built on urllib3."""

import logging
import threading
import time

import pytest
from ports import free_port
from threaded_server import LoopbackServer, QuietHandler, answering, send_json

from tfkfp.components.common.endpoint.backoff import Backoff, wait_after
from tfkfp.components.common.endpoint.client import EndpointClient
from tfkfp.components.common.endpoint.errors import EndpointError, RowsRefused


class Scripted(LoopbackServer):
    """Answers each request with the next (status, headers) of ``script``, then 200."""

    def __init__(self, script):
        super().__init__(_Handler)
        self.script, self.seen, self.lock = list(script), [], threading.Lock()


class _Handler(QuietHandler):
    def do_GET(self):
        self._answer()

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._answer()

    def _answer(self):
        with self.server.lock:
            self.server.seen.append((self.command, self.path, dict(self.headers)))
            status, headers = self.server.script.pop(0) if self.server.script else (200, {})
        send_json(self, status, {"ok": status == 200} if status == 200 else
                  {"error": f"scripted {status}"}, headers)


def client(url, retries=3, **kwargs):
    slept = []
    made = EndpointClient(url, {"X-Extra": "1"}, retries, 5.0, sleep=slept.append, **kwargs)
    return made, slept


def test_transient_answers_are_retried_doubling_from_half_a_second(caplog):
    caplog.set_level(logging.WARNING, logger="tfkfp")
    with answering(Scripted([(503, {}), (502, {}), (429, {})])) as server:
        sender, slept = client(server.url + "/prefix/")
        assert sender.post("/infer", b"{}") == {"ok": True}
    assert [p for _, p, _ in server.seen] == ["/prefix/infer"] * 4
    for wait, nominal in zip(slept, (0.5, 1.0, 2.0)):
        assert nominal * 0.8 <= wait <= nominal * 1.2, slept
    assert (sender.requests, sender.retried) == (4, 3)
    logged = [r.getMessage() for r in caplog.records]
    assert "/prefix/infer answered 503; retrying in" in logged[0]
    assert logged[0].endswith("(attempt 2 of 4)") and logged[2].endswith("(attempt 4 of 4)")


def test_retry_after_is_honoured_on_every_retried_status_up_to_15_s():
    script = [(503, {"Retry-After": "2"}), (504, {"Retry-After": "120"}),
              (429, {"Retry-After": "1.5"}), (502, {"Retry-After": "soon"})]
    with answering(Scripted(script)) as server:
        sender, slept = client(server.url, retries=4)
        sender.post("/infer", b"{}")
    assert slept[:3] == [2, 15.0, 1.5] and 3.2 <= slept[3] <= 4.8, slept  # 4th: 4 s


def test_retries_spent_name_the_last_problem_and_the_setting():
    with answering(Scripted([(503, {})] * 3)) as server, pytest.raises(
            EndpointError, match=r"/infer answered 503; gave up after 3 attempts "
                                 r"\(endpoint_retries 2\)"):
        client(server.url, retries=2)[0].post("/infer", b"{}")


def test_a_refused_request_is_not_retried_even_with_retry_after():
    with answering(Scripted([(413, {"Retry-After": "1"})])) as server, \
            pytest.raises(RowsRefused, match="413: scripted 413") as refused:
        client(server.url)[0].post("/infer", b"{}")
    assert refused.value.status == 413 and len(server.seen) == 1


def test_other_answers_fail_at_once_naming_the_url():
    with answering(Scripted([(401, {})])) as server, pytest.raises(
            EndpointError, match=r"127.0.0.1:\d+/infer answered 401: scripted 401"):
        client(server.url)[0].post("/infer", b"{}")


def test_an_unreachable_server_is_retried_then_named_as_the_os_reports_it():
    url = f"http://127.0.0.1:{free_port()}"
    sender, slept = client(url, retries=1)
    with pytest.raises(EndpointError, match=r"connection failed \(ConnectionRefusedError: "
                                            r".*; gave up after 2 attempts"):
        sender.post("/infer", b"{}")
    assert len(slept) == 1 and sender.retried == 1
    with pytest.raises(ConnectionRefusedError):  # get: the OSError, not urllib3's wrapper
        sender.get("/ready")


def test_a_server_that_does_not_answer_in_time_names_endpoint_timeout_s():
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)  # accepts connections, never answers
        sender = EndpointClient(f"http://127.0.0.1:{silent.getsockname()[1]}", {}, 0, 0.3)
        with pytest.raises(EndpointError, match=r"did not answer within 0.3 s "
                                                r"\(endpoint_timeout_s\); gave up after 1 "
                                                r"attempts \(endpoint_retries 0\)"):
            sender.post("/infer", b"{}")


def test_auth_headers_are_asked_afresh_for_every_attempt():
    tokens = iter(["first", "second"])
    with answering(Scripted([(503, {})])) as server:
        sender, _ = client(server.url, auth=lambda: {"Authorization": next(tokens)})
        sender.post("/infer", b"{}")
    sent = [h.get("Authorization") for _, _, h in server.seen]
    assert sent == ["first", "second"] and server.seen[0][2]["X-Extra"] == "1"


def test_a_backoff_with_a_deadline_retries_until_then_at_its_own_pace():
    with answering(Scripted([(503, {})] * 1000)) as server:
        sender = EndpointClient(server.url, {}, 0, 5.0)
        started = time.monotonic()
        answer = sender.send("GET", "/ready", retry=sender.backoff(
            total=None, status_forcelist={503}, every_s=0.05,
            give_up_at=time.monotonic() + 0.5))
    assert answer.status == 503 and answer.reason == "Service Unavailable"
    assert 0.5 <= time.monotonic() - started < 3 and 5 <= len(server.seen) <= 11


def test_the_schedule_doubles_to_15_s_and_urllib3_keeps_it_across_attempts():
    for failures, nominal in ((1, 0.5), (2, 1.0), (5, 8.0)):
        assert nominal * 0.8 <= wait_after(failures) <= nominal * 1.2
    assert all(15 * 0.8 <= wait_after(n) <= 15 * 1.2 for n in (6, 50, 10_000))
    made = Backoff(3, every_s=1.0, on_wait=print).new(total=2)
    assert (made.every_s, made.on_wait, made.total) == (1.0, print, 2)
