"""Scenario (skeleton): ``tfkfp serve`` QPS and latency against the same KServe server
without batching (``--max-batch-size 1``: one concrete-function call per request), on
loopback, one row per request, at 1 and 32 concurrent clients; medians of ``--runs`` runs.

Still to add (issue 20): the no-op ceiling (a no-op model in the same KServe server),
``model.predict`` per request, a TFLite int8 bundle beside the SavedModel, an external load
generator (this one, tfkfp loadtest's, is Python threads on the same cores, so it caps
both servers alike).

``python -m benchmarks.serving MODEL [--requests 2000] [--seconds 8] [--runs 3]``
"""

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from typing import Dict

from tfkfp.components.serve.loadtest import run_level

LEVELS = (1, 32)


def start(model: str, *args: str) -> tuple:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "tfkfp.pipelines.cli", "serve", model, "--host", "127.0.0.1",
         "--port", str(port), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if _request(port, "GET", "/v2/health/ready", None)[0] == 200:
                return process, port
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"tfkfp serve {model} did not become ready")


def _request(port: int, method: str, path: str, body: bytes | None, conn=None):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers={"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if own:
        conn.close()
    return response.status, data


def load(port: int, body: bytes, clients: int, requests: int, seconds: float) -> Dict:
    """One level with tfkfp loadtest's closed loop: QPS, p50/p99 latency (ms), errors."""
    level = run_level(f"127.0.0.1:{port}", "/v1/models/model:predict", [body], clients,
                      requests, seconds)
    return {"qps": level.qps, "p50_ms": level.p50_ms, "p99_ms": level.p99_ms,
            "errors": level.errors}


def row_body(port: int) -> bytes:
    """One row of zeros (empty strings) shaped as the model's v2 metadata says."""
    _, data = _request(port, "GET", "/v2/models/model", None)
    row = {}
    for spec in json.loads(data)["inputs"]:
        count = 1
        for d in spec["shape"][1:]:
            count *= d
        value = "" if spec["datatype"] == "BYTES" else 0
        row[spec["name"]] = value if len(spec["shape"]) == 1 else [value] * count
    return json.dumps({"instances": [row]}).encode()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving")
    parser.add_argument("model")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    servers = {"tfkfp serve": (), "unbatched": ("--max-batch-size", "1")}
    results: Dict[str, Dict] = {}
    for name, extra in servers.items():
        process, port = start(args.model, *extra)
        try:
            body = row_body(port)
            for clients in LEVELS:
                runs = [load(port, body, clients, args.requests, args.seconds)
                        for _ in range(args.runs)]
                results[f"{name} c{clients}"] = {k: statistics.median(r[k] for r in runs)
                                                 for k in runs[0]}
                print(f"{name:<12} {clients:>3} clients: " + ", ".join(
                    f"{k} {v:,.1f}" for k, v in results[f"{name} c{clients}"].items()),
                    flush=True)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    for clients in LEVELS:
        ours, anchor = results[f"tfkfp serve c{clients}"], results[f"unbatched c{clients}"]
        print(f"{clients:>3} clients: QPS {ours['qps'] / anchor['qps']:.2f}x the unbatched "
              f"server, p50 {ours['p50_ms'] / anchor['p50_ms']:.2f}x, "
              f"p99 {ours['p99_ms'] / anchor['p99_ms']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
