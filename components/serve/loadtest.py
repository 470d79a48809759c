"""``tfkfp loadtest``: QPS and latency of a served model at given concurrency levels.

A closed loop: each of ``clients`` keep-alive HTTP connections sends the next v1 request
when the previous answer arrives, until ``requests`` are answered or ``seconds`` pass (both
bounded). Rows come from a Dataset directory (its eval split), as the model's clients would
send them. The load generator runs on the caller's cores: on one machine with the server it
takes CPU from it, so compare servers under the same generator.
"""

import asyncio
import dataclasses
import http.client
import json
import math
import time
import urllib.parse
from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.common.model import routes
from tfkfp.components.serve.errors import ServeOptionsError

MAX_REQUESTS, MAX_SECONDS, MAX_CLIENTS = 1_000_000, 600.0, 256
ANSWER_TIMEOUT_S = 30.0  # past the level's end, what is still unanswered is an error
MAX_BACKOFF_S = 1.0  # the longest a client waits after a request got no answer at all


@dataclasses.dataclass(frozen=True)
class Level:
    clients: int
    requests: int  # answered with 200
    errors: int  # answered otherwise, or failed to connect
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float

    @property
    def qps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def to_dict(self) -> Dict[str, Any]:
        return {**dataclasses.asdict(self), "qps": round(self.qps, 1)}

    def line(self) -> str:
        return (f"{self.clients:>4} clients: {self.qps:,.1f} QPS, p50 {self.p50_ms:.1f} ms, "
                f"p95 {self.p95_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, {self.errors} errors")


def check(url: str, clients: Sequence[int], requests: int, seconds: float) -> str:
    """The URL's host:port, after refusing what would be unbounded or malformed."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "http" or not parsed.hostname:
        raise ServeOptionsError(f"url {url!r}: expected http://HOST:PORT of a tfkfp serve or "
                                "KServe server")
    if not clients or any(not 1 <= c <= MAX_CLIENTS for c in clients):
        raise ServeOptionsError(f"concurrency {list(clients)}: each level must be 1 to "
                                f"{MAX_CLIENTS} clients")
    if not 1 <= requests <= MAX_REQUESTS or not 0 < seconds <= MAX_SECONDS:
        raise ServeOptionsError(f"requests {requests} / seconds {seconds}: expected 1 to "
                                f"{MAX_REQUESTS:,} requests and at most {MAX_SECONDS:.0f} s "
                                "per level")
    return parsed.netloc


def instances(dataset: str, rows: int, split: str = "eval") -> List[Dict[str, Any]]:
    """Up to ``rows`` rows of a Dataset directory as v1 instances (JSON values: a float gap
    is null, strings are text)."""
    from tfkfp.components.common.data.reader import make_dataset

    out: List[Dict[str, Any]] = []
    for features, keys in make_dataset(dataset, mode="predict", split=split, batch_size=256):
        columns = {**{k: v.numpy() for k, v in features.items()},
                   **{k: v.numpy() for k, v in keys.items()}}
        count = len(next(iter(columns.values())))
        for i in range(count):
            out.append({name: _json_value(values[i]) for name, values in columns.items()})
            if len(out) == rows:
                return out
    if not out:
        raise ServeOptionsError(f"{dataset}: the {split} split has no rows to send")
    return out


def _json_value(value):
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def run_level(netloc: str, path: str, bodies: List[bytes], clients: int, requests: int,
              seconds: float) -> Level:
    """One concurrency level: a closed loop of ``clients`` keep-alive connections, all on
    one event loop (uvloop's where installed) in this thread. Each request is written as
    prepared bytes and its answer read by its length, so the generator spends about a third
    of the CPU per request that threads with ``http.client`` did: less taken from a server
    on the same machine, and more requests per second from one process."""
    from tfkfp.components.serve.server import new_event_loop

    loop = new_event_loop()
    try:
        return loop.run_until_complete(_level(netloc, path, bodies, clients, requests,
                                              seconds))
    finally:
        loop.close()


async def _level(netloc: str, path: str, bodies: List[bytes], clients: int, requests: int,
                 seconds: float) -> Level:
    parsed = urllib.parse.urlsplit(f"//{netloc}")
    host, port = parsed.hostname, parsed.port or 80
    prepared = [_request(netloc, path, body) for body in bodies]
    latencies: List[float] = []
    counts = {"sent": 0, "errors": 0}
    deadline = time.monotonic() + seconds

    async def client() -> None:
        connection, backoff = None, 0.0
        try:
            while time.monotonic() < deadline and counts["sent"] < requests:
                request = prepared[counts["sent"] % len(prepared)]
                counts["sent"] += 1
                started = time.perf_counter()
                try:
                    if connection is None:
                        connection = await asyncio.open_connection(host, port)
                    connection[1].write(request)
                    status, keep = await _answer(connection[0])
                except (OSError, EOFError, ValueError, IndexError, asyncio.LimitOverrunError):
                    status, keep = 0, False
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    counts["errors"] += 1
                if status != 200 or not keep:  # a fresh connection after a failure
                    _close(connection)
                    connection = None
                # no answer at all (a server gone or restarting): back off, as clients do,
                # rather than spin on refused connections until the level ends
                backoff = 0.0 if status else min(MAX_BACKOFF_S, max(2 * backoff, 0.01))
                if backoff:
                    await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
        finally:
            _close(connection)

    started = time.perf_counter()
    tasks = [asyncio.ensure_future(client()) for _ in range(clients)]
    _, late = await asyncio.wait(tasks, timeout=seconds + ANSWER_TIMEOUT_S)
    for task in late:  # a request unanswered this long counts as an error
        task.cancel()
        counts["errors"] += 1
    if late:
        await asyncio.wait(late)
    wall = time.perf_counter() - started
    ms = sorted(x * 1000 for x in latencies)
    return Level(clients, len(ms), counts["errors"], wall, _percentile(ms, 0.50),
                 _percentile(ms, 0.95), _percentile(ms, 0.99))


def _request(netloc: str, path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _answer(reader: asyncio.StreamReader) -> Tuple[int, bool]:
    """(status, whether the connection stays open) of one HTTP/1.1 answer, read whole."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    if b"chunked" in headers.get(b"transfer-encoding", b""):
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)  # the chunk and its CRLF
            if size == 0:
                break
    elif b"content-length" in headers:
        await reader.readexactly(int(headers[b"content-length"]))
    else:  # the body runs to the end of the connection
        await reader.read()
        return status, False
    return status, headers.get(b"connection") != b"close"


def _close(connection) -> None:
    if connection is not None:
        connection[1].close()


def _check_ready(netloc: str, model: str, url: str) -> None:
    conn = http.client.HTTPConnection(netloc, timeout=10)
    try:
        conn.request("GET", routes.v1_model(model))
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as err:
        raise ServeOptionsError(f"{url}: cannot connect ({err})") from None
    finally:
        conn.close()
    if status != 200:
        raise ServeOptionsError(f"{url}: model {model!r} is not ready (HTTP {status} from "
                                f"{routes.v1_model(model)})")


def _percentile(sorted_ms: List[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]


def loadtest(url: str, dataset: str, clients: Sequence[int] = (1, 8, 32),
             requests: int = 2000, seconds: float = 10.0, rows_per_request: int = 1,
             model: str = "model", split: str = "eval", stream=None) -> List[Level]:
    """Load ``url``'s model ``model`` at each concurrency level in turn."""
    netloc = check(url, clients, requests, seconds)
    if rows_per_request < 1:
        raise ServeOptionsError(f"rows_per_request {rows_per_request} is below 1")
    rows = instances(dataset, max(rows_per_request * 64, 256), split)
    bodies = [json.dumps({"instances": [rows[(i + j) % len(rows)]
                                        for j in range(rows_per_request)]}).encode()
              for i in range(0, len(rows), rows_per_request)]
    path = routes.v1_predict(model)
    _check_ready(netloc, model, url)
    levels = []
    for count in clients:
        level = run_level(netloc, path, bodies, count, requests, seconds)
        if stream is not None:
            print(level.line(), file=stream, flush=True)
        levels.append(level)
    return levels
