"""``tfkfp loadtest``: QPS and latency of a served model (tfkfp serve, KServe) at concurrency
levels (closed loops) or arrival rates (open loops), from rows or a request body file."""

import argparse
import json
import sys


def add_parser(commands) -> None:
    loadtest = commands.add_parser(
        "loadtest", help="QPS and latency of a served model at concurrency levels",
        description="Send predict requests to a tfkfp serve (or KServe) server over http or "
        "https: v1 requests built from rows (a Dataset, a CSV or a JSON Lines file), or a "
        "request body file as it is. Each concurrency level is a closed loop; with --rate, "
        "each arrival rate is an open loop. Levels are bounded by --requests and --seconds. "
        "Prints QPS and p50/p95/p99 latency per level.")
    loadtest.add_argument("url", help="the server, e.g. http://127.0.0.1:8080")
    loadtest.add_argument("--dataset", default="", metavar="ROWS",
                          help="the rows sent: a Dataset folder (its eval split), a CSV file "
                          "(.csv) or a JSON Lines file (.jsonl)")
    loadtest.add_argument("--body", default="", metavar="FILE",
                          help="instead of --dataset: a request body file sent as it is (v1, "
                          "v2 or TF Serving form, e.g. from tfkfp serve --example-request)")
    loadtest.add_argument("--model", default="model", help="model name in the URLs")
    loadtest.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32],
                          metavar="CLIENTS", help="levels, one after another (default 1 8 32)")
    loadtest.add_argument("--requests", type=int, default=2000, help="per level at most")
    loadtest.add_argument("--seconds", type=float, default=10.0, help="per level at most")
    loadtest.add_argument("--rows-per-request", type=int, default=1)
    loadtest.add_argument("--rate", type=float, nargs="+", default=[], metavar="QPS",
                          help="open loop: levels of requests offered per second, sent at "
                          "that pace over up to max(--concurrency) connections whatever the "
                          "answers do; latency counts from when each request was due")
    loadtest.add_argument("-H", "--header", action="append", default=[], metavar="'NAME: VALUE'",
                          help="a header every request carries, e.g. 'Host: NAME.NAMESPACE."
                          "example.com' for an InferenceService behind its ingress")
    loadtest.add_argument("--token-file", metavar="PATH",
                          help="send 'Authorization: Bearer <the file's content>', kept out of "
                          "the command line")
    loadtest.add_argument("--cacert", metavar="PATH",
                          help="https: trust this CA bundle (a private CA)")
    loadtest.add_argument("--insecure", action="store_true",
                          help="https: do not verify the server's certificate (a self-signed "
                          "test endpoint)")
    loadtest.add_argument("--exclude-precomputed", action="store_true",
                          help="leave out the rows a server's precomputed set answers "
                          "(tfkfp serve --precomputed), so the levels load the model; "
                          "without it their count is printed")
    loadtest.add_argument("--json", metavar="PATH", help="also write the figures as JSON")


def run(args: argparse.Namespace) -> None:
    from tfkfp.components.common.platform import uris
    from tfkfp.components.serve.loadtest import loadtest

    headers = list(args.header)
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            headers.append(f"Authorization: Bearer {f.read().strip()}")
    levels = loadtest(args.url, args.dataset, args.concurrency, args.requests, args.seconds,
                      args.rows_per_request, args.model, stream=sys.stdout, rates=args.rate,
                      headers=headers, insecure=args.insecure, cafile=args.cacert or "",
                      exclude_precomputed=args.exclude_precomputed, body=args.body)
    if args.json:
        figures = {"url": args.url, "model": args.model, "open_loop": bool(args.rate),
                   "rows_per_request": args.rows_per_request,
                   "exclude_precomputed": args.exclude_precomputed,
                   "levels": [level.to_dict() for level in levels]}
        uris.write_text_atomic(args.json, json.dumps(figures, indent=2) + "\n")

