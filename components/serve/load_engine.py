"""The load generator of ``tfkfp loadtest``: one level of requests, closed or open loop, on
one event loop, and the figures it measured (Level).

A closed loop keeps ``clients`` keep-alive connections each sending its next request when the
previous answer arrives; an open loop sends requests due at a fixed arrival rate (_Schedule)
and counts each latency from its due time. Requests are prepared bytes and answers are read
by their length (_answer), so the generator takes little CPU from a server on the same
machine. Target says where the requests go: host, port, TLS and the header lines each
carries.
"""

import asyncio
import dataclasses
import ssl
import time
import urllib.parse
from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.serve.errors import ServeOptionsError

ANSWER_TIMEOUT_S = 30.0  # past the level's end, what is still unanswered is an error
MAX_BACKOFF_S = 1.0  # the longest a client waits after a request got no answer at all


@dataclasses.dataclass(frozen=True)
class Level:
    clients: int  # connections
    requests: int  # answered with 200
    errors: int  # answered otherwise, or failed to connect
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    rate: float = 0.0  # requests per second offered (open loop); 0: a closed loop
    precomputed: int | None = None  # rows the server's precomputed set answered; None: unknown

    @property
    def qps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def to_dict(self) -> Dict[str, Any]:
        return {**dataclasses.asdict(self), "qps": round(self.qps, 1)}

    def line(self) -> str:
        load = (f"{self.rate:>8,.1f} req/s offered" if self.rate
                else f"{self.clients:>4} clients")
        looked_up = (f", {self.precomputed:,} rows answered from the precomputed set"
                     if self.precomputed else "")
        return (f"{load}: {self.qps:,.1f} QPS, p50 {self.p50_ms:.1f} ms, "
                f"p95 {self.p95_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, {self.errors} errors"
                f"{looked_up}")


@dataclasses.dataclass(frozen=True)
class Target:
    """Where requests go: host and port to connect to, TLS, and the header lines every
    request carries (``Host`` as given, or the URL's)."""

    host: str
    port: int
    headers: bytes  # "Name: value\r\n" lines
    tls: ssl.SSLContext | None = None

    @classmethod
    def plain(cls, netloc: str) -> "Target":
        """http://``netloc`` with no extra header."""
        return target(f"http://{netloc}")


def target(url: str, headers: Sequence[str] = (), insecure: bool = False,
           cafile: str = "") -> Target:
    """The Target of ``url`` (http or https) with ``headers`` ("Name: value" each)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ServeOptionsError(f"url {url!r}: expected http://HOST:PORT or https://HOST of "
                                "a tfkfp serve or KServe server")
    lines, names = [], set()
    for header in headers:
        name, colon, value = header.partition(":")
        if not colon or not name.strip() or any(c in header for c in "\r\n"):
            raise ServeOptionsError(f"header {header!r}: expected 'Name: value'")
        names.add(name.strip().lower())
        lines.append(f"{name.strip()}: {value.strip()}\r\n")
    if "host" not in names:
        lines.insert(0, f"Host: {parsed.netloc}\r\n")
    tls = None
    if parsed.scheme == "https":
        tls = ssl.create_default_context(cafile=cafile or None)
        if insecure:  # a self-signed test endpoint: the user asked for no verification
            tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    port = parsed.port or (443 if tls else 80)
    return Target(parsed.hostname, port, "".join(lines).encode(), tls)


def run_level(where: "Target | str", path: str, bodies: List[bytes], clients: int,
              requests: int, seconds: float, rate: float = 0.0) -> Level:
    """One level, all on one event loop (uvloop's where installed) in this thread: a closed
    loop of ``clients`` keep-alive connections, or with ``rate`` an open loop offering that
    many requests per second over up to ``clients`` connections. Each request is written as
    prepared bytes and its answer read by its length, so the generator spends about a third
    of the CPU per request that threads with ``http.client`` did: less taken from a server
    on the same machine, and more requests per second from one process. ``where`` is a
    Target, or the host:port of a plain http server."""
    from tfkfp.components.serve.server import new_event_loop

    where = Target.plain(where) if isinstance(where, str) else where
    loop = new_event_loop()
    try:
        return loop.run_until_complete(_level(where, path, bodies, clients, requests,
                                              seconds, rate))
    finally:
        loop.close()


async def _level(where: Target, path: str, bodies: List[bytes], clients: int, requests: int,
                 seconds: float, rate: float) -> Level:
    prepared = [_request(where, path, body) for body in bodies]
    latencies: List[float] = []
    counts = {"sent": 0, "errors": 0}
    deadline = time.monotonic() + seconds
    due = _schedule(rate, requests, seconds) if rate else None

    async def client() -> None:
        connection, backoff = None, 0.0
        try:
            while time.monotonic() < deadline and counts["sent"] < requests:
                if due is not None:  # open loop: the next request due, waited for
                    intended = await due.next()
                    if intended is None:
                        return
                request = prepared[counts["sent"] % len(prepared)]
                counts["sent"] += 1
                started = time.perf_counter() if due is None else intended
                try:
                    if connection is None:
                        connection = await asyncio.open_connection(
                            where.host, where.port, ssl=where.tls)
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
    if due is not None:  # due but never sent by the level's end: late without bound
        counts["errors"] += due.count - due.taken
    wall = time.perf_counter() - started
    ms = sorted(x * 1000 for x in latencies)
    return Level(clients, len(ms), counts["errors"], wall, _percentile(ms, 0.50),
                 _percentile(ms, 0.95), _percentile(ms, 0.99), rate)


class _Schedule:
    """The open loop's due times: request i is due at start + i / rate. A connection takes
    the next due request and waits for its time; one taken late (all connections were busy)
    keeps its due time, so the wait counts in its latency."""

    def __init__(self, rate: float, count: int):
        self.rate, self.count, self.taken = rate, count, 0
        self.start = time.perf_counter()

    async def next(self) -> float | None:
        if self.taken >= self.count:
            return None
        intended = self.start + self.taken / self.rate
        self.taken += 1
        wait = intended - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        return intended


def _schedule(rate: float, requests: int, seconds: float) -> _Schedule:
    return _Schedule(rate, min(requests, max(1, int(rate * seconds))))


def _request(where: Target, path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\n".encode() + where.headers
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body)


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


def _percentile(sorted_ms: List[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]
