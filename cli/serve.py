"""``tfkfp serve``: a tfkfp SavedModel or TFLite bundle on the KServe model server (v1 and v2
protocols, adaptive micro-batching), or ``--example-request``: a request body for it."""

import argparse

from tfkfp.cli.option_flags import add_flag
from tfkfp.components.common.endpoint.options import served_protocols


def _either(names) -> str:
    """'a, b or c'."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def add_parser(commands) -> None:
    from tfkfp.components.serve.options import ServeOptions as Serve

    serve = commands.add_parser(
        "serve", help="serve a model over KServe's v1 and v2 protocols",
        description="Serve a tfkfp SavedModel or TFLite bundle on the KServe model server: "
        "POST /v1/models/NAME:predict and /v2/models/NAME/infer, with adaptive "
        "micro-batching.")
    serve.add_argument("model", help="SavedModel directory, TFLite bundle or .tflite file")
    add_flag(serve, Serve, "name")
    add_flag(serve, Serve, "host",
             help="address REST and gRPC listen on (default 127.0.0.1: this machine only; "
             "0.0.0.0 serves every interface, as a pod needs)")
    add_flag(serve, Serve, "http_port", "--port", metavar="PORT",
             help="HTTP port (default 8080)")
    add_flag(serve, Serve, "grpc_port")
    for name in ("max_batch_size", "max_latency_ms", "max_queue", "max_instances",
                 "max_request_bytes", "top_k", "threads"):
        add_flag(serve, Serve, name)
    add_flag(serve, Serve, "keys", action="extend", nargs="+", metavar="COLUMN",
             help="columns echoed into answers (default: the schema's keys)")
    add_flag(serve, Serve, "precomputed", metavar="PREDICTIONS",
             help="batch_predict's predictions folder (jsonl or csv): v1 instances whose key "
             "is in it are answered from it, the rest by the model")
    add_flag(serve, Serve, "precomputed_key", metavar="COLUMN")
    add_flag(serve, Serve, "precomputed_max_age_s", "--precomputed-max-age", metavar="SECONDS")
    add_flag(serve, Serve, "precomputed_reload_s", "--precomputed-reload", metavar="SECONDS")
    add_flag(serve, Serve, "model_repository_api", action="store_true",
             help="serve KServe's model-repository API (POST /v2/repository/models/NAME/"
             "load|unload and its gRPC twins) to clients on 127.0.0.1 or ::1 only, e.g. "
             "KServe's agent in the same pod (default: off)")
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
                                     f"http://{args.host}:{args.http_port}")
    from tfkfp.components.serve.options import ServeOptions
    from tfkfp.components.serve.server import serve

    options = ServeOptions.of(  # --keys, a list, is held as a tuple
        vars(args), keys=tuple(args.keys) if args.keys is not None else None)
    if serve(args.model, options):
        raise RuntimeError(f"model {args.model} could not be loaded (see the log above)")

