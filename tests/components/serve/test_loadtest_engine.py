"""The load generator's engine against a plain HTTP/1.1 server: every request sent whole and
counted once, answers read by length, chunked or to the connection's end, failures and
unanswered requests counted as errors, and both bounds kept."""

import http.server
import threading
import time

import pytest

from tfkfp.components.serve import load_engine, loadtest


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told otherwise
    received: list = []
    seen_headers: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.seen_headers.append(dict(self.headers))
        if self.path == "/hang":
            time.sleep(3)
        if self.path == "/slow":
            time.sleep(0.05)
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

    def do_GET(self):  # the readiness check before a load
        self.seen_headers.append(dict(self.headers))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_):
        pass


@pytest.fixture
def server():
    _Handler.received, _Handler.seen_headers = [], []
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
    level = load_engine.run_level(server, path, bodies, 3, 30, 30.0)
    assert (level.requests, level.errors, level.clients) == (30, 0, 3)
    assert sorted(b for _, b in _Handler.received) == sorted(bodies * 15)
    assert {p for p, _ in _Handler.received} == {path}
    assert 0 < level.p50_ms <= level.p95_ms <= level.p99_ms


def test_failures_are_errors_and_the_request_bound_holds(server):
    level = load_engine.run_level(server, "/fail", [b"{}"], 4, 10, 30.0)
    assert (level.requests, level.errors) == (0, 10) and len(_Handler.received) == 10


def test_nothing_listening_is_errors_within_the_bounds():
    from serve_process import free_port

    level = load_engine.run_level(f"127.0.0.1:{free_port()}", "/ok", [b"{}"], 2, 6, 30.0)
    assert (level.requests, level.errors) == (0, 6)
    # for a whole second: each client backs off (10 ms, doubling) rather than spinning on
    # refused connections (thousands of errors a second per client)
    level = load_engine.run_level(f"127.0.0.1:{free_port()}", "/ok", [b"{}"], 2, 10**6, 1.0)
    assert level.requests == 0 and 2 <= level.errors <= 2 * 12


def test_an_unanswered_request_is_an_error_once_the_level_is_over(server, monkeypatch):
    monkeypatch.setattr(load_engine, "ANSWER_TIMEOUT_S", 0.5)
    level = load_engine.run_level(server, "/hang", [b"{}"], 2, 100, 0.5)
    # each client's first request waits 3 s for its answer: both given up, not counted as
    # answered, and no further request sent
    assert (level.requests, level.errors) == (0, 2) and len(_Handler.received) == 2


def test_every_request_carries_the_headers_given_and_host_as_given(server):
    where = load_engine.target(f"http://{server}", ["Host: digits.models.example.com",
                                                 "Authorization: Bearer s3cret"])
    level = load_engine.run_level(where, "/ok", [b"{}"], 2, 6, 30.0)
    assert (level.requests, level.errors) == (6, 0)
    for headers in _Handler.seen_headers:
        assert headers["Host"] == "digits.models.example.com"
        assert headers["Authorization"] == "Bearer s3cret"
    plain = load_engine.target(f"http://{server}")
    assert plain.headers == f"Host: {server}\r\n".encode()


@pytest.mark.parametrize("header", ["no colon", "X: a\r\nInjected: b", ": empty name"])
def test_a_malformed_header_is_refused(header):
    with pytest.raises(loadtest.ServeOptionsError, match="expected 'Name: value'"):
        load_engine.target("http://127.0.0.1:1", [header])


def test_an_open_loop_counts_latency_from_when_each_request_was_due(server):
    """One connection, a server that takes 50 ms an answer, 20 requests offered at 50 per
    second: the 20th cannot be answered before 20 x 50 ms after the first was due, though it
    was due 380 ms after it, so its latency is at least 0.62 s, whatever this machine's
    speed. A closed loop would have reported about 50 ms for every request."""
    level = load_engine.run_level(server, "/slow", [b"{}"], 1, 20, 30.0, rate=50.0)
    assert (level.requests, level.errors, level.rate) == (20, 0, 50.0)
    assert level.p99_ms >= 620 and level.p99_ms > level.p50_ms
    assert "50.0 req/s offered: " in level.line()


def test_requests_due_but_never_sent_by_the_levels_end_are_errors(server):
    level = load_engine.run_level(server, "/slow", [b"{}"], 1, 1000, 0.3, rate=1000.0)
    assert level.requests + level.errors == 300  # every due request accounted for once
    assert level.errors > 0 and len(_Handler.received) == level.requests


def test_an_unbounded_rate_is_refused():
    with pytest.raises(loadtest.ServeOptionsError, match="at most 100,000 requests per second"):
        loadtest.check("http://h:1", [1], 10, 1.0, rates=[1e9])


@pytest.fixture
def tls_server(tmp_path):
    """The plain server behind TLS with a self-signed certificate for 127.0.0.1."""
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    _Handler.received, _Handler.seen_headers = [], []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}", str(tmp_path / "cert.pem")
    httpd.shutdown()
    httpd.server_close()


def test_https_with_the_servers_ca_or_without_verification(tls_server):
    url, ca = tls_server
    for where in (load_engine.target(url, cafile=ca), load_engine.target(url, insecure=True)):
        level = load_engine.run_level(where, "/ok", [b"{}"], 2, 4, 30.0)
        assert (level.requests, level.errors) == (4, 0)
    unverified = load_engine.run_level(load_engine.target(url), "/ok", [b"{}"], 1, 2, 30.0)
    assert unverified.requests == 0  # an unknown CA is refused, not trusted silently


def test_the_readiness_check_goes_the_same_way_as_the_load(tls_server, tmp_path, capsys):
    """tfkfp loadtest's first request, the readiness check, over https with the headers and
    the token file given: the token never on the command line."""
    from tfkfp.cli.main import main

    url, ca = tls_server
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    # the Dataset is read after the check: a missing one fails only once the check passed
    assert main(["loadtest", url, "--dataset", str(tmp_path / "none"), "--cacert", ca,
                 "-H", "Host: digits.example.com", "--token-file", str(token)]) == 1
    (headers,) = _Handler.seen_headers
    assert headers["Host"] == "digits.example.com"
    assert headers["Authorization"] == "Bearer s3cret"
    assert "cannot connect" not in capsys.readouterr().err


def test_leaving_out_every_row_a_precomputed_set_answers_may_leave_nothing(monkeypatch):
    from tfkfp.components.serve.errors import ServeOptionsError

    rows = [{"id": i} for i in range(4)]
    monkeypatch.setattr(loadtest, "precomputed_rows", lambda *args: [True] * len(rows))
    where = load_engine.Target.plain("127.0.0.1:1")
    assert loadtest._model_rows(where, "m", "u", rows, 1, False, None) == rows
    with pytest.raises(ServeOptionsError, match=r"--exclude-precomputed: all 4 rows of the "
                                                r"load were answered from the server's "
                                                r"precomputed set; nothing is left"):
        loadtest._model_rows(where, "m", "u", rows, 1, True, None)
