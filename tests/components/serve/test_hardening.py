"""``tfkfp serve`` against hostile or careless clients, as a real process: JSON nested past
any reader's recursion gets 400 naming it, clients sending half a header are answered 408
and disconnected, and a port in use stops the start in one line before the model loads."""

import os
import socket
import subprocess
import sys
import time

import pytest
from serve_process import running

pytestmark = pytest.mark.slow

GOOD = {"x": 0.5, "colour": "blue"}
V1, V2 = "/v1/models/model:predict", "/v2/models/model/infer"
DEEP = b"[" * 100_000 + b"]" * 100_000
HEADER_TIMEOUT_S = 10  # ServeOptions' default
HALF_HEADER = b"POST /v1/models/model:predict HTTP/1.1\r\nHost: x\r\nContent-Ty"


def whole_log(server) -> str:
    """The server's whole log (a traceback's first line is far from its tail)."""
    with open(server.log, errors="replace") as f:
        return f.read()


@pytest.fixture(scope="module")
def server(string_table, tmp_path_factory):
    with running(string_table.model, tmp_path=tmp_path_factory.mktemp("hardening")) as s:
        yield s


@pytest.mark.parametrize("kind", ["application/json", "application/x-www-form-urlencoded",
                                  None])
def test_json_nested_100000_deep_is_refused_with_400_naming_it(server, kind):
    headers = {"content-type": kind or ""}  # "": a body without a type
    for path, body in [(V1, DEEP), (V1, b'{"instances": %s}' % DEEP),
                       (V1, b'{"instances": [{"x": NaN, "colour": %s}]}' % DEEP),
                       (V2, DEEP), (V2, b'{"inputs": %s}' % DEEP)]:
        status, got = server.request("POST", path, body, headers)
        assert status == 400 and "nested too deeply" in got["error"], (path, kind, got)
    assert server.v1([GOOD])[0] == 200
    assert "Traceback" not in whole_log(server) and "internal error" not in whole_log(server)


def test_clients_sending_half_a_header_are_answered_408_and_closed_in_time(server):
    conns = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(50)]
    try:
        for conn in conns:
            conn.sendall(HALF_HEADER)
        sent = time.monotonic()
        answers = []
        for conn in conns:
            conn.settimeout(HEADER_TIMEOUT_S + 20)  # 2 busy cores: seen late, not never
            received = b""
            while chunk := conn.recv(4096):
                received += chunk
            answers.append(received)
        took = time.monotonic() - sent
    finally:
        for conn in conns:
            conn.close()
    assert all(a.startswith(b"HTTP/1.1 408 ") and b"request headers not received in full "
               b"within 10 s" in a for a in answers), answers[0]
    assert HEADER_TIMEOUT_S - 1 < took < HEADER_TIMEOUT_S + 20
    assert server.v1([GOOD])[0] == 200


def test_a_client_leaving_mid_body_is_no_server_error(server):
    """Not an internal error with a traceback in the log (nor a refusal: no one to tell)."""
    for path in (V1, V2):
        with socket.create_connection(("127.0.0.1", server.port)) as conn:
            conn.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"inst" % path.encode())
            time.sleep(0.5)  # the app is reading the body when the client goes
    time.sleep(1)
    assert server.v1([GOOD])[0] == 200
    log = whole_log(server)
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    assert "error parsing the body" not in log, log[-3000:]


def test_a_port_in_use_stops_the_start_in_one_line_before_the_model_loads(string_table,
                                                                          tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        gate = tmp_path / "never"  # loading would wait here: the start must not get there
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "tfkfp.cli.main", "serve", string_table.model, "--port",
             str(port)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                 "TFKFP_SERVE_LOAD_GATE": str(gate)})
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 1 and len(lines) == 1, lines
    assert lines[0] == (f"tfkfp serve: error: port {port} on 127.0.0.1 is already in use "
                        "(another server is listening there): stop it or choose another "
                        "port with --port")
    assert time.monotonic() - started < 60
