"""A real ``tfkfp serve`` process on a free loopback port, and small HTTP helpers (the
serve tests).

The server is the CLI in a child process (``python -m tfkfp.cli.main serve``), so the
tests see what a user or a Kubernetes probe sees: readiness, HTTP status codes, SIGTERM.
"""

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

from ports import free_port

from benchmarks.serving import terminate

START_TIMEOUT = 180  # seconds for TensorFlow to import and the model to load on 2 busy cores


class Server:
    """A started server: its process, port and a log file to show when something fails."""

    def __init__(self, process: subprocess.Popen, port: int, log: str, host: str = "127.0.0.1"):
        self.process, self.port, self.log, self.host = process, port, log, host

    def request(self, method: str, path: str, body=None, headers=None, timeout: float = 60):
        """(status, parsed JSON or text) of one request on a fresh connection."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            conn.request(method, path, body=data, headers={
                "content-type": "application/json", **(headers or {})})
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def v1(self, instances, name="model"):
        return self.request("POST", f"/v1/models/{name}:predict", {"instances": instances})

    def v2(self, inputs, name="model"):
        return self.request("POST", f"/v2/models/{name}/infer", {"inputs": inputs})

    def metric(self, name: str) -> float:
        _, text = self.request("GET", "/metrics")
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def wait_until(self, check, what: str, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited ({self.process.returncode}) before "
                                     f"{what}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not {what} after {timeout} s:\n{self.tail()}")
            time.sleep(0.05)

    def alive(self) -> bool:
        with contextlib.suppress(OSError):
            return self.request("GET", "/", timeout=5)[0] == 200
        return False

    def ready(self) -> bool:
        return self.request("GET", "/v2/health/ready", timeout=5)[0] == 200

    def tail(self) -> str:
        with open(self.log, errors="replace") as f:
            return f.read()[-4000:]


def start_on(model: str, port: int, log: str, env=None) -> Server:
    """``tfkfp serve MODEL --top-k 2`` on a given port, ready (a restarted server takes the
    same one); the caller stops it."""
    command = [sys.executable, "-m", "tfkfp.cli.main", "serve", model, "--host", "127.0.0.1",
               "--port", str(port), "--threads", "2", "--top-k", "2"]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                        **(env or {})})
    server = Server(process, port, log)
    server.wait_until(server.alive, "listening")
    server.wait_until(server.ready, "ready")
    return server


def restarted_mid_run(model: str, port: int, tmp_path, in_flight: int, work):
    """Run ``work()`` on a thread against a server of ``model`` on ``port`` whose model calls
    all wait; once ``in_flight`` requests are in flight, SIGKILL it (they die with it) and
    start another on the same port. Returns what ``work()`` returned."""
    gate = str(tmp_path / "never")  # not created: the first server's model calls all wait
    first = start_on(model, port, str(tmp_path / "first.log"), {"TFKFP_SERVE_CALL_GATE": gate})
    done = {}
    thread = threading.Thread(target=lambda: done.update(result=work()))
    thread.start()
    second = None
    try:
        first.wait_until(lambda: first.metric("tfkfp_requests_in_flight") >= in_flight,
                         f"{in_flight} request(s) in flight")
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        second = start_on(model, port, str(tmp_path / "second.log"))
        thread.join(timeout=300)
    finally:
        for server in (first, second):
            if server is not None and server.process.poll() is None:
                server.process.kill()
                server.process.wait()
    return done["result"]


@contextlib.contextmanager
def running(model: str, *args: str, env=None, tmp_path=None, wait_ready=True,
            host: str | None = "127.0.0.1"):
    """``tfkfp serve MODEL ARGS`` on ``host`` (None: no --host, the default) until the block
    ends (then SIGTERM, or kill)."""
    port = free_port()
    log = str(tmp_path / f"serve-{port}.log")
    command = [sys.executable, "-m", "tfkfp.cli.main", "serve", model,
               *(["--host", host] if host else []), "--port", str(port), "--threads", "2",
               *args]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                        **(env or {})})
    server = Server(process, port, log, host or "127.0.0.1")
    try:
        server.wait_until(server.alive, "listening")
        if wait_ready:
            server.wait_until(server.ready, "ready")
        yield server
    finally:
        if process.poll() is None:
            terminate(process)
