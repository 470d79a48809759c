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

Here: the options' checks and the run, level after level. The load itself is load_engine's,
the requests beside it (readiness, the precomputed set) load_probes', the rows load_inputs'.
"""

import dataclasses
import json
import urllib.parse
from typing import Any, Dict, List, Sequence

from tfkfp.components.common.model import routes
from tfkfp.components.serve import load_inputs
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.load_engine import Level, Target, run_level, target
from tfkfp.components.serve.load_probes import check_ready, precomputed_rows, precomputed_total

MAX_REQUESTS, MAX_SECONDS, MAX_CLIENTS = 1_000_000, 600.0, 256
MAX_RATE = 100_000.0  # requests per second one open-loop level may offer


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
    check_ready(where, model, url)  # before reading rows, which imports TensorFlow
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
