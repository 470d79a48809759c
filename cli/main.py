"""The ``tfkfp`` command: shard data, compile, run and submit pipelines, run the demo job."""

import argparse
import json
import logging
import os
import sys
from typing import Dict, List

from tfkfp.cli import check, extras, pipeline_help, stream
from tfkfp.cli.option_flags import add_flag
from tfkfp.cli.submit import ENDPOINT_ENV
from tfkfp.components._image import IMAGE, IMAGE_ENV, __version__
from tfkfp.components.common.data.layouts import LAYOUTS
from tfkfp.components.common.endpoint.options import served_protocols
from tfkfp.pipelines import registry
from tfkfp.pipelines.accelerator import DEFAULT_TYPE, parse_gpu


class UsageError(ValueError):
    """Options the command cannot take together, or one it needs: exit status 2, as for
    argparse's own usage errors."""


def _column_types(pairs: List[str]) -> Dict[str, str]:
    types = {}
    for pair in pairs:
        name, sep, dtype = pair.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(
                f"--column-types {pair!r}: expected NAME=TYPE, e.g. age=float32")
        types[name] = dtype
    return types


def _either(names) -> str:
    """'a, b or c'."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfkfp", description="Kubeflow Pipelines components for high-performance "
        "TensorFlow.")
    parser.add_argument("--version", action="version", version=f"tfkfp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_shard_command(commands)

    demo_data = commands.add_parser("demo-data", help="write the built-in demo data")
    demo_data.add_argument("directory")

    compile_ = commands.add_parser("compile", help="compile every pipeline to YAML")
    compile_.add_argument("--out", default=".", help="folder for <pipeline>.yaml (default .)")
    _add_gpu_option(compile_)
    _add_image_option(compile_)
    _add_sizes_option(compile_)
    _add_store_options(compile_)

    run = commands.add_parser("run", help="run a pipeline on this machine",
                              description="Run a pipeline on this machine with the KFP local "
                              "runner. " + pipeline_help.pipelines_line() + ".", add_help=False)
    run.add_argument("-h", "--help", action=pipeline_help.PipelineHelp,
                     help="show this help (after PIPELINE: also its parameters) and exit")
    run.add_argument("name", metavar="PIPELINE", help="pipeline name: "
                     + ", ".join(registry.names()))
    run.add_argument("--local", action="store_true",
                     help="no longer needed: the KFP local runner is the default and only "
                     "runner; accepted for older commands, with a note on stderr")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     dest="parameters", help="pipeline parameter (repeatable; `tfkfp run "
                     "PIPELINE --help` lists them)")
    run.add_argument("--pipeline-root", default="tfkfp-runs",
                     help="where outputs go (default tfkfp-runs)")
    _add_verbose_option(run)
    run.add_argument("-q", "--quiet", action="store_true",
                     help="only a line per task as it starts and ends, no progress lines")

    submit = commands.add_parser("submit", help="start a run on a Kubeflow Pipelines server",
                                 description="Compile a pipeline and start a run of it on a "
                                 "Kubeflow Pipelines server. " + pipeline_help.pipelines_line()
                                 .replace("tfkfp run", "tfkfp submit") + ".", add_help=False)
    submit.add_argument("-h", "--help", action=pipeline_help.PipelineHelp,
                        help="show this help (after PIPELINE: also its parameters) and exit")
    submit.add_argument("name", metavar="PIPELINE", help="pipeline name: "
                        + ", ".join(registry.names()))
    submit.add_argument("--endpoint", "--host", dest="host", default="", metavar="URL",
                        help="KFP API endpoint, e.g. http://localhost:8080 "
                        f"(default ${ENDPOINT_ENV}, which kfp.Client reads too; "
                        "--host is the same option)")
    submit.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        dest="parameters", help="pipeline parameter (repeatable)")
    submit.add_argument("--experiment", default="tfkfp", help="experiment name")
    submit.add_argument("--service-account", default="", help="the steps' Kubernetes service "
                        "account, e.g. tfkfp-runner (default: the server's)")
    _add_gpu_option(submit)
    _add_image_option(submit)
    submit.add_argument("--namespace", default="", help="the profile namespace of a "
                        "multi-user Kubeflow (runs start there as default-editor)")
    token = submit.add_mutually_exclusive_group()
    token.add_argument("--token", default="", help="a bearer token for the KFP API; others "
                       "can read it in the process list: prefer --token-file or "
                       "$TFKFP_KFP_TOKEN")
    token.add_argument("--token-file", default="", metavar="PATH", help="a file holding the "
                       "token, read before each request (a projected service-account token); "
                       "default $KF_PIPELINES_SA_TOKEN_PATH or Kubeflow's mount "
                       "/var/run/secrets/kubeflow/pipelines/token where it exists")
    submit.add_argument("--no-cache", action="store_true",
                        help="run every step again rather than reuse cached results")
    _add_sizes_option(submit)
    _add_store_options(submit)
    check.add_mounted_option(submit)
    check.add_parser(commands)
    stream.add_parser(commands)

    demo = commands.add_parser("demo", help="the main job on the built-in demo data")
    demo.add_argument("--out", default="tfkfp-demo", help="working folder (default "
                      "./tfkfp-demo)")
    _add_verbose_option(demo)
    _add_serve_parser(commands)
    _add_loadtest_parser(commands)
    return parser


def _add_loadtest_parser(commands) -> None:
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


def _add_verbose_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="stream every task's output (the runner's, the component's, "
                        "TensorFlow's) to the console; without it the console gets a line "
                        "per task and each task's log goes to <run folder>/logs/<task>.log")


def _add_serve_parser(commands) -> None:
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


def _shard(args: argparse.Namespace) -> None:
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # here rather than mid-progress
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.shard_tfrecords.options import ShardOptions

    options = ShardOptions.of(vars(args), column_types=_column_types(args.column_types))
    result = shard_tfrecords(args.input, args.dataset, options, shard_dir=args.shard_dir,
                             progress_stream=sys.stderr)
    print(result.markdown())
    print(f"Dataset written to {args.dataset}")


def _demo_data(args: argparse.Namespace) -> None:
    from tfkfp.components.common.data.demo_data import write_demo_data

    data = write_demo_data(args.directory)
    print(f"{data.rows} digits written as {data.csv} and {data.images}/")


def _demo(args: argparse.Namespace) -> None:
    from tfkfp.cli.demo import run_demo

    run_demo(args.out, args.verbose)


def _add_shard_command(commands) -> None:
    """``tfkfp shard``: its flags are shard_tfrecords' settings (ShardOptions), so the command
    shards as the step does."""
    from tfkfp.components.shard_tfrecords.options import ShardOptions as Shard

    shard = commands.add_parser("shard", help="shard CSV/JSONL/Parquet/npz/images into "
                                "TFRecords", description="Shard input data into a TFRecord "
                                "Dataset directory (train/, eval/, schema.json, manifest.json).")
    shard.add_argument("input", help="file, folder, glob pattern or gs:// URI")
    shard.add_argument("dataset", help="the Dataset directory to write")
    add_flag(shard, Shard, "label", help=f"{Shard.meaning('label')}; omit for unlabeled data "
             "to predict on")
    add_flag(shard, Shard, "keys", metavar="COLUMN")
    for name in ("eval_fraction", "split_column", "compression"):
        add_flag(shard, Shard, name)
    size = shard.add_mutually_exclusive_group()
    add_flag(size, Shard, "shard_size_mb", metavar="MB")
    add_flag(size, Shard, "num_shards", metavar="N")
    add_flag(shard, Shard, "min_shards")
    add_flag(shard, Shard, "column_types", action="extend", nargs="+", default=[],
             metavar="NAME=TYPE")
    for name in ("input_format", "threads", "missing"):
        add_flag(shard, Shard, name)
    add_flag(shard, Shard, "layout", help="; ".join(
        f"{n}: {x.summary}" for n, x in LAYOUTS.items()) + f" (default {Shard().layout})")
    add_flag(shard, Shard, "block_rows")
    shard.add_argument("--shard-dir", default="", metavar="URI",
                       help="keep the shards here (a path or s3://, minio://, gs:// URI) and "
                       "only schema.json and manifest.json in DATASET, which lists them by "
                       "URI (default: inside DATASET)")


def _add_gpu_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=0, metavar="COUNT",
                        help="run training's train step in the GPU image on COUNT GPUs")
    parser.add_argument("--gpu-type", default=DEFAULT_TYPE, metavar="TYPE",
                        help=f"what the cluster schedules: {DEFAULT_TYPE} (Kubernetes, the "
                        "default) or a Vertex AI accelerator such as NVIDIA_TESLA_T4")


def _add_image_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image", default=os.environ.get(IMAGE_ENV, ""),
                        metavar="REGISTRY/NAME:TAG",
                        help=f"run every step in this image (GPU steps in TAG-gpu) instead of "
                        f"{IMAGE}; REGISTRY/NAME[:TAG]@sha256:DIGEST is kept as given (no "
                        "GPU steps); auto: the digest scripts/build-image.sh recorded in "
                        f"images/built-image.txt; default ${IMAGE_ENV}")


def _image(args: argparse.Namespace, gpu) -> str:
    """--image checked, ``auto`` resolved, before anything is written ("": the suite's)."""
    if not args.image:
        return ""
    from tfkfp.pipelines.images import gpu_variant, resolve_image

    image = resolve_image(args.image)
    if gpu is not None:
        gpu_variant(image)  # a digest cannot name the GPU steps' image: refused here
    return image


def _add_sizes_option(parser: argparse.ArgumentParser) -> None:
    from tfkfp.pipelines.resources import profiles

    parser.add_argument("--sizes", choices=profiles(), default="cluster",
                        help="the steps' CPU and memory: cluster (the gke and onprem overlays, "
                        "the default) or kind (a laptop; within the kind overlay's LimitRange)")


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store-secret", default="", metavar="SECRET",
                        help="give every step the keys of this Secret (keys accesskey and "
                        "secretkey, as KFP's mlpipeline-minio-artifact) as AWS_ACCESS_KEY_ID "
                        "and AWS_SECRET_ACCESS_KEY, so steps read s3:// and minio:// data and "
                        "stream shards from the data root (docs/how-to/object-stores.md)")
    parser.add_argument("--store-endpoint", default="", metavar="URL",
                        help="with --store-secret: the store's URL as AWS_ENDPOINT_URL, e.g. "
                        "http://minio-service.kubeflow:9000 (default: that for minio://, AWS "
                        "for s3://)")


def _store(args: argparse.Namespace):
    """The store access of --store-secret/--store-endpoint, checked (None without them)."""
    if args.store_endpoint and not args.store_secret:
        raise ValueError("--store-endpoint needs --store-secret SECRET (the keys to use)")
    if not args.store_secret:
        return None
    from tfkfp.pipelines.store_access import StoreAccess

    return StoreAccess(args.store_secret, args.store_endpoint)


def _gpu(args: argparse.Namespace):
    """The train step's GPU request from --gpus and --gpu-type (None for none)."""
    if not args.gpus:
        if args.gpu_type != DEFAULT_TYPE:
            raise ValueError(f"--gpu-type {args.gpu_type} needs --gpus COUNT")
        return None
    return parse_gpu(args.gpus, args.gpu_type)


def _compile(args: argparse.Namespace) -> None:
    from tfkfp.pipelines import registry

    gpu, store = _gpu(args), _store(args)  # checked before anything is written
    image = _image(args, gpu)
    os.makedirs(args.out, exist_ok=True)
    for name in registry.names():
        print(registry.compile_pipeline(name, os.path.join(args.out, f"{name}.yaml"), gpu,
                                        args.sizes, image, store))


def _parameters(args: argparse.Namespace, runs_on: str, mounted: List[str] = ()) -> Dict:
    """The --set values, typed and checked. Their form (an unknown pipeline or parameter, a
    value not of its type, a required one missing) is a usage error; a value that the steps
    or where they run would refuse is the command's own error."""
    try:
        values = registry.parse_pairs(args.name, args.parameters)
        inputs = registry.load(args.name).component_spec.inputs or {}
    except registry.ParameterError as err:
        raise UsageError(str(err)) from err
    missing = sorted(k for k, spec in inputs.items() if not spec.optional and k not in values)
    if missing:
        raise UsageError(f"pipeline {args.name!r} needs {', '.join(missing)}: pass "
                         + " ".join(f"--set {k}=..." for k in missing))
    return registry.parse_parameters(args.name, args.parameters, runs_on, mounted)


def _run(args: argparse.Namespace) -> None:
    from tfkfp.cli import local_run
    from tfkfp.pipelines import checks, registry

    parameters = _parameters(args, runs_on="local")
    # a value whose task imports an extra (launcher=vertex) is refused before the first task
    extras.require_for_parameters(checks.with_defaults(registry.load(args.name), parameters),
                                  args.name)
    if args.local:  # the old spelling of the default: said as the run starts, not over errors
        print("tfkfp run: --local is the default (the KFP local runner is the only one); it "
              "can be left out", file=sys.stderr)
    run = local_run.run_local(args.name, parameters, args.pipeline_root, args.verbose,
                              progress=not args.quiet)
    print("\n".join(local_run.summary_lines(run)))


def _submit(args: argparse.Namespace) -> None:
    from tfkfp.cli import submit

    args.host = args.host or os.environ.get(ENDPOINT_ENV, "")  # as kfp.Client reads it
    if not args.host:
        raise UsageError(f"no KFP API endpoint: pass --endpoint URL or set "
                         f"${ENDPOINT_ENV}")
    parameters = _parameters(args, runs_on="cluster",
                             mounted=check.mounted_folders(args.mounted))
    gpu, store = _gpu(args), _store(args)
    run_id = submit.submit(args.name, parameters, args.host, args.experiment,
                           args.service_account, gpu, args.sizes, image=_image(args, gpu),
                           namespace=args.namespace, token=args.token,
                           cache=not args.no_cache, token_file=args.token_file, store=store)
    print(f"started run {run_id} of {args.name!r} on {args.host}")


def _check(args: argparse.Namespace) -> int:
    return check.run_check(args, sys.stdout)


def _loadtest(args: argparse.Namespace) -> None:
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


def _serve(args: argparse.Namespace) -> None:
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


def main(argv: List[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    handlers = {"shard": _shard, "demo-data": _demo_data, "demo": _demo, "compile": _compile,
                "run": _run, "submit": _submit, "serve": _serve,
                "loadtest": _loadtest, "check": _check, "stream": stream.run,
                "allow-image": check.allow_list.run_allow_image}
    try:
        extras.require(args.command)  # its runtime here, before any work
        status = handlers[args.command](args)  # None: done; check: its exit status
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback; a rerun starts afresh
        print(f"tfkfp {args.command}: interrupted", file=sys.stderr)
        return 130
    except UsageError as err:  # the command line's form: argparse's status
        print(f"tfkfp {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError, argparse.ArgumentTypeError) as err:
        print(f"tfkfp {args.command}: error: {err}", file=sys.stderr)
        return 1
    except ImportError as err:  # an extra the light install leaves out: the line to type
        extra = extras.missing_extra(err, args.command)
        if extra is None:
            raise
        print(extras.install_hint(err, args.command, extra), file=sys.stderr)
        return 1
    except Exception as err:  # re-raised below unless it is TensorFlow's (remote paths)
        if not _is_tensorflow_error(err):
            raise
        print(f"tfkfp {args.command}: error: {_tensorflow_message(err, args)}",
              file=sys.stderr)
        return 1
    return status or 0


def _is_tensorflow_error(err: Exception) -> bool:
    """tf.errors.OpError, which gfile raises for a gs:// path it cannot reach; checked by
    name so that this module does not import TensorFlow."""
    return any(c.__name__ == "OpError" and c.__module__.startswith("tensorflow")
               for c in type(err).__mro__)


def _tensorflow_message(err: Exception, args: argparse.Namespace) -> str:
    """The error on one line, naming the paths of the command if TensorFlow did not."""
    text = " ".join(str(getattr(err, "message", "") or err).split())
    paths = [p for p in (getattr(args, "input", None), getattr(args, "dataset", None)) if p]
    if paths and not any(p in text for p in paths):
        text += f" (input {paths[0]}" + (f", output {paths[1]})" if len(paths) > 1 else ")")
    return f"{type(err).__name__}: {text}"


if __name__ == "__main__":
    sys.exit(main())
