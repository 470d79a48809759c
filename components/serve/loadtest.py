"""``tfkfp loadtest``: QPS and latency of a served model at given concurrency levels or
arrival rates.

Closed loop (the default): each of ``clients`` keep-alive HTTP connections sends the next v1
request when the previous answer arrives, until ``requests`` are answered or ``seconds``
pass (both bounded). Open loop (``rates``): requests are due at a fixed arrival rate whatever
the answers do, sent over up to ``connections`` keep-alive connections, and each latency is
counted from the time its request was due, so a server that falls behind shows its queue in
the latency instead of slowing the generator down (the closed loop's coordinated omission).
Rows come from a Dataset directory (its eval split), as the model's clients would send them.
A deployed endpoint is reached over http or https with the headers it needs (``Host`` for
an InferenceService behind its ingress, ``Authorization``). The load generator runs on the
caller's cores: on one machine with the server it takes CPU from it, so compare servers
under the same generator.

A server started with ``--precomputed`` answers rows whose key its set holds without running
the model, so a load of such rows measures the lookup. Before the levels each row is sent
once and counted when its answer is marked ``precomputed`` (components/serve/precomputed.py);
the count is printed, and ``exclude_precomputed`` leaves those rows out. Each level also
reports how many rows the server's set answered during it (its /metrics counter
``tfkfp_precomputed_answers_total``; None where the server has no such counter).
"""

import asyncio
import dataclasses
import http.client
import json
import ssl
import time
import urllib.parse
from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.common.model import routes
from tfkfp.components.serve import load_inputs
from tfkfp.components.serve.errors import ServeOptionsError

MAX_REQUESTS, MAX_SECONDS, MAX_CLIENTS = 1_000_000, 600.0, 256
MAX_RATE = 100_000.0  # requests per second one open-loop level may offer
ANSWER_TIMEOUT_S = 30.0  # past the level's end, what is still unanswered is an error
MAX_BACKOFF_S = 1.0  # the longest a client waits after a request got no answer at all
PRECOMPUTED_METRIC = "tfkfp_precomputed_answers_total"  # components/serve/metrics.py


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


def check(url: str, clients: Sequence[int], requests: int, seconds: float,
          rates: Sequence[float] = ()) -> str:
    """The URL's host:port, after refusing what would be unbounded or malformed."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ServeOptionsError(f"url {url!r}: expected http://HOST:PORT or https://HOST of "
                                "a tfkfp serve or KServe server")
    if not clients or any(not 1 <= c <= MAX_CLIENTS for c in clients):
        raise ServeOptionsError(f"concurrency {list(clients)}: each level must be 1 to "
                                f"{MAX_CLIENTS} clients")
    if any(not 0 < r <= MAX_RATE for r in rates):
        raise ServeOptionsError(f"rate {list(rates)}: each level must offer more than 0 and "
                                f"at most {MAX_RATE:,.0f} requests per second")
    if not 1 <= requests <= MAX_REQUESTS or not 0 < seconds <= MAX_SECONDS:
        raise ServeOptionsError(f"requests {requests} / seconds {seconds}: expected 1 to "
                                f"{MAX_REQUESTS:,} requests and at most {MAX_SECONDS:.0f} s "
                                "per level")
    return parsed.netloc


def instances(dataset: str, rows: int, split: str = "eval") -> List[Dict[str, Any]]:
    """Up to ``rows`` rows of a Dataset directory as v1 instances (JSON values: a float gap
    is null, strings are text)."""
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # the reader's; its start-up lines stay off the console
    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.endpoint.protocols import v1_instances

    out: List[Dict[str, Any]] = []
    for features, keys in make_dataset(dataset, mode="predict", split=split, batch_size=256,
                                       max_rows=rows):
        columns = {**{k: v.numpy() for k, v in features.items()},
                   **{k: v.numpy() for k, v in keys.items()}}
        out += v1_instances(columns)[:rows - len(out)]
        if len(out) == rows:
            return out
    if not out:
        raise ServeOptionsError(f"{dataset}: the {split} split has no rows to send")
    return out


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


def _call(where: Target, method: str, path: str, url: str, body: bytes = b"") -> tuple:
    """(status, body text) of one request carrying the target's headers."""
    if where.tls is None:
        conn = http.client.HTTPConnection(where.host, where.port, timeout=ANSWER_TIMEOUT_S)
    else:
        conn = http.client.HTTPSConnection(where.host, where.port, timeout=ANSWER_TIMEOUT_S,
                                           context=where.tls)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for line in where.headers.decode().splitlines():
            name, _, value = line.partition(":")
            conn.putheader(name, value.strip())
        if body:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as err:
        raise ServeOptionsError(f"{url}: cannot connect ({err})") from None
    finally:
        conn.close()


def _check_ready(where: Target, model: str, url: str) -> None:
    status, _ = _call(where, "GET", routes.v1_model(model), url)
    if status != 200:
        raise ServeOptionsError(f"{url}: model {model!r} is not ready (HTTP {status} from "
                                f"{routes.v1_model(model)})")


def precomputed_rows(where: Target, model: str, url: str, rows: List[Dict[str, Any]],
                     rows_per_request: int) -> List[bool]:
    """Per row, whether the server answered it from its precomputed set (each row sent
    once, ``rows_per_request`` a request)."""
    marked: List[bool] = []
    for start in range(0, len(rows), rows_per_request):
        chunk = rows[start:start + rows_per_request]
        status, text = _call(where, "POST", routes.v1_predict(model), url,
                             json.dumps({"instances": chunk}).encode())
        try:
            answers = json.loads(text)["predictions"] if status == 200 else None
        except (ValueError, KeyError, TypeError):
            answers = None
        if not isinstance(answers, list) or len(answers) != len(chunk):
            raise ServeOptionsError(f"{url}: rows {start}-{start + len(chunk) - 1} of the "
                                    f"load were answered {status}: {text[:300]}")
        marked += [isinstance(a, dict) and a.get("precomputed") is True for a in answers]
    return marked


def precomputed_total(where: Target, model: str, url: str) -> float | None:
    """The server's count of rows its precomputed set answered for ``model`` (/metrics);
    None where it reports no such count."""
    status, text = _call(where, "GET", "/metrics", url)
    label = f'model_name="{model}"'
    for line in text.splitlines() if status == 200 else []:
        if line.startswith(PRECOMPUTED_METRIC + "{") and label in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def _percentile(sorted_ms: List[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]


def loadtest(url: str, dataset: str, clients: Sequence[int] = (1, 8, 32),
             requests: int = 2000, seconds: float = 10.0, rows_per_request: int = 1,
             model: str = "model", split: str = "eval", stream=None,
             rates: Sequence[float] = (), headers: Sequence[str] = (), insecure: bool = False,
             cafile: str = "", exclude_precomputed: bool = False,
             body: str = "") -> List[Level]:
    """Load ``url``'s model ``model`` at each concurrency level in turn, or with ``rates``
    at each arrival rate in turn over up to ``max(clients)`` connections; with
    ``exclude_precomputed`` only rows the model answers (see the module). ``dataset`` is a
    Dataset folder, a CSV or a JSON Lines file of rows; ``body`` a request body file sent
    as it is instead (see load_inputs)."""
    check(url, clients, requests, seconds, rates)
    if rows_per_request < 1:
        raise ServeOptionsError(f"rows_per_request {rows_per_request} is below 1")
    if bool(dataset) == bool(body):
        raise ServeOptionsError("give --dataset (rows) or --body (a request body file), "
                                "one of them")
    where = target(url, headers, insecure, cafile)
    _check_ready(where, model, url)  # before reading rows, which imports TensorFlow
    if body:
        path, data = load_inputs.body_of(body, model)
        bodies = [data]
    else:
        path, bodies = routes.v1_predict(model), _row_bodies(
            where, model, url, dataset, split, rows_per_request, exclude_precomputed, stream)
    levels = []
    loads = [(max(clients), rate) for rate in rates] or [(count, 0.0) for count in clients]
    for count, rate in loads:
        before = precomputed_total(where, model, url)
        level = run_level(where, path, bodies, count, requests, seconds, rate)
        after = precomputed_total(where, model, url)
        if before is not None and after is not None:
            level = dataclasses.replace(level, precomputed=int(after - before))
        if stream is not None:
            print(level.line(), file=stream, flush=True)
        levels.append(level)
    return levels


def _row_bodies(where: Target, model: str, url: str, dataset: str, split: str,
                rows_per_request: int, exclude: bool, stream) -> List[bytes]:
    rows = load_inputs.rows_of(dataset, max(rows_per_request * 64, 256), split)
    rows = _model_rows(where, model, url, rows, rows_per_request, exclude, stream)
    return [json.dumps({"instances": [rows[(i + j) % len(rows)]
                                      for j in range(rows_per_request)]}).encode()
            for i in range(0, len(rows), rows_per_request)]


def _model_rows(where: Target, model: str, url: str, rows: List[Dict[str, Any]],
                rows_per_request: int, exclude: bool, stream) -> List[Dict[str, Any]]:
    """The rows to load with, after saying how many the precomputed set answers (and,
    with ``exclude``, leaving those out)."""
    marked = precomputed_rows(where, model, url, rows, rows_per_request)
    answered = sum(marked)
    if stream is not None and (answered or exclude):
        what = ("left out: the levels load the model" if exclude else
                "the levels measure the lookup for them (--exclude-precomputed leaves them "
                "out)")
        print(f"{answered} of {len(rows)} rows were answered from the server's precomputed "
              f"set, not by the model; {what}", file=stream, flush=True)
    if not exclude:
        return rows
    kept = [row for row, known in zip(rows, marked) if not known]
    if not kept:
        raise ServeOptionsError(f"--exclude-precomputed: all {len(rows)} rows of the load "
                                "were answered from the server's precomputed set; nothing "
                                "is left for the model (send a Dataset whose keys the set "
                                "lacks)")
    return kept
