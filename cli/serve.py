"""``tfkfp serve``: a tfkfp SavedModel or TFLite bundle on the KServe model server (v1 and v2
protocols, adaptive micro-batching), or ``--example-request``: a request body for it."""

import argparse

from tfkfp.components.common.endpoint.options import served_protocols


def _either(names) -> str:
    """'a, b or c'."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def add_parser(commands) -> None:
    serve = commands.add_parser(
        "serve", help="serve a model over KServe's v1 and v2 protocols",
        description="Serve a tfkfp SavedModel or TFLite bundle on the KServe model server: "
        "POST /v1/models/NAME:predict and /v2/models/NAME/infer, with adaptive "
        "micro-batching.")
    serve.add_argument("model", help="SavedModel directory, TFLite bundle or .tflite file")
    serve.add_argument("--name", default="model", help="model name in the URLs")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address REST and gRPC listen on (default 127.0.0.1: this machine "
                       "only; 0.0.0.0 serves every interface, as a pod needs)")
    serve.add_argument("--port", type=int, default=8080, help="HTTP port (default 8080)")
    serve.add_argument("--grpc-port", type=int, default=0, help="v2 gRPC port (0: none)")
    serve.add_argument("--max-batch-size", type=int, default=64, help="rows per model call")
    serve.add_argument("--max-latency-ms", type=float, default=2.0,
                       help="longest a batch waits for requests already arriving")
    serve.add_argument("--max-queue", type=int, default=256,
                       help="waiting requests beyond which new ones get 503")
    serve.add_argument("--max-instances", type=int, default=1024, help="rows per request")
    serve.add_argument("--max-request-bytes", type=int, default=8 << 20,
                       help="request body limit (413 above it)")
    serve.add_argument("--top-k", type=int, default=1, help="best classes per answer")
    serve.add_argument("--threads", type=int, default=0,
                       help="model threads (default: the container's CPU limit less "
                            "one, for the event loop; at least 1)")
    serve.add_argument("--keys", action="extend", nargs="+", default=None, metavar="COLUMN",
                       help="columns echoed into answers (default: the schema's keys)")
    serve.add_argument("--precomputed", default="", metavar="PREDICTIONS",
                       help="batch_predict's predictions folder (jsonl or csv): v1 instances "
                       "whose key is in it are answered from it, the rest by the model")
    serve.add_argument("--precomputed-key", default="", metavar="COLUMN",
                       help="the key column the precomputed answers are looked up by")
    serve.add_argument("--precomputed-max-age", type=float, default=0.0, metavar="SECONDS",
                       help="answers older than this go to the model (default 0: no limit)")
    serve.add_argument("--precomputed-reload", type=float, default=30.0, metavar="SECONDS",
                       help="how often a newer precomputed set is looked for (0: never)")
    serve.add_argument("--model-repository-api", action="store_true",
                       help="serve KServe's model-repository API (POST /v2/repository/models/"
                       "NAME/load|unload and its gRPC twins) to clients on 127.0.0.1 or ::1 "
                       "only, e.g. KServe's agent in the same pod (default: off)")
    serve.add_argument("--example-request", choices=served_protocols(),
                       metavar="PROTOCOL", help="print a valid one-row request body for the "
                       f"model in PROTOCOL ({_either(served_protocols())}) and exit, without "
                       "serving; its URL goes to stderr")


def run(args: argparse.Namespace) -> None:
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # before the server's own log lines, not among them
    if args.example_request:
        from tfkfp.components.serve.examples import print_example_request

        return print_example_request(args.model, args.example_request, args.name,
                                     f"http://{args.host}:{args.port}")
    from tfkfp.components.serve.options import ServeOptions
    from tfkfp.components.serve.server import serve

    options = ServeOptions(
        name=args.name, host=args.host, http_port=args.port, grpc_port=args.grpc_port,
        max_batch_size=args.max_batch_size, max_latency_ms=args.max_latency_ms,
        max_queue=args.max_queue, max_instances=args.max_instances,
        max_request_bytes=args.max_request_bytes, top_k=args.top_k, threads=args.threads,
        keys=tuple(args.keys) if args.keys is not None else None,
        precomputed=args.precomputed, precomputed_key=args.precomputed_key,
        precomputed_max_age_s=args.precomputed_max_age,
        precomputed_reload_s=args.precomputed_reload,
        model_repository_api=args.model_repository_api)
    if serve(args.model, options):
        raise RuntimeError(f"model {args.model} could not be loaded (see the log above)")

