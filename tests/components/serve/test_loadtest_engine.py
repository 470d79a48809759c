"""The load generator's engine against a plain HTTP/1.1 server: every request sent whole and
counted once, answers read by length, chunked or to the connection's end, failures and
unanswered requests counted as errors, and both bounds kept."""

import http.server
import threading
import time

import pytest

from tfkfp.components.serve import loadtest


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told otherwise
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        if self.path == "/hang":
            time.sleep(3)
        status = 500 if self.path == "/fail" else 200
        answer = b'{"predictions": [{"class": "a"}]}'
        self.send_response(status)
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (answer[:10], answer[10:], b""):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            return
        if self.path == "/close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


@pytest.fixture
def server():
    _Handler.received = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("path", ["/ok", "/chunked", "/close"])
def test_every_request_is_sent_whole_and_answered_once(server, path):
    bodies = [b'{"instances": [{"x": 1}]}', b'{"instances": [{"x": "\xc3\xa9"}]}']
    level = loadtest.run_level(server, path, bodies, 3, 30, 30.0)
    assert (level.requests, level.errors, level.clients) == (30, 0, 3)
    assert sorted(b for _, b in _Handler.received) == sorted(bodies * 15)
    assert {p for p, _ in _Handler.received} == {path}
    assert 0 < level.p50_ms <= level.p95_ms <= level.p99_ms


def test_failures_are_errors_and_the_request_bound_holds(server):
    level = loadtest.run_level(server, "/fail", [b"{}"], 4, 10, 30.0)
    assert (level.requests, level.errors) == (0, 10) and len(_Handler.received) == 10


def test_nothing_listening_is_errors_within_the_bounds():
    from serve_process import free_port

    level = loadtest.run_level(f"127.0.0.1:{free_port()}", "/ok", [b"{}"], 2, 6, 30.0)
    assert (level.requests, level.errors) == (0, 6)
    # for a whole second: each client backs off (10 ms, doubling) rather than spinning on
    # refused connections (thousands of errors a second per client)
    level = loadtest.run_level(f"127.0.0.1:{free_port()}", "/ok", [b"{}"], 2, 10**6, 1.0)
    assert level.requests == 0 and 2 <= level.errors <= 2 * 12


def test_an_unanswered_request_is_an_error_once_the_level_is_over(server, monkeypatch):
    monkeypatch.setattr(loadtest, "ANSWER_TIMEOUT_S", 0.5)
    level = loadtest.run_level(server, "/hang", [b"{}"], 2, 100, 0.5)
    # each client's first request waits 3 s for its answer: both given up, not counted as
    # answered, and no further request sent
    assert (level.requests, level.errors) == (0, 2) and len(_Handler.received) == 2
