"""The ``tfkfp`` command: shard data, compile, run and submit pipelines, run the demo job."""

import argparse
import logging
import os
import sys
from typing import Dict, List

from tfkfp.cli import check, compile_options, extras, loadtest, pipeline_help, serve, shard, stream
from tfkfp.cli.submit import ENDPOINT_ENV
from tfkfp.components._image import __version__
from tfkfp.pipelines import registry


class UsageError(ValueError):
    """Options the command cannot take together, or one it needs: exit status 2, as for
    argparse's own usage errors."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfkfp", description="Kubeflow Pipelines components for high-performance "
        "TensorFlow.")
    parser.add_argument("--version", action="version", version=f"tfkfp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    shard.add_parser(commands)

    demo_data = commands.add_parser("demo-data", help="write the built-in demo data")
    demo_data.add_argument("directory")

    compile_ = commands.add_parser("compile", help="compile every pipeline to YAML")
    compile_.add_argument("--out", default=".", help="folder for <pipeline>.yaml (default .)")
    compile_options.add_gpu_option(compile_)
    compile_options.add_image_option(compile_)
    compile_options.add_sizes_option(compile_)
    compile_options.add_store_options(compile_)

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
    compile_options.add_gpu_option(submit)
    compile_options.add_image_option(submit)
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
    compile_options.add_sizes_option(submit)
    compile_options.add_store_options(submit)
    check.add_mounted_option(submit)
    check.add_parser(commands)
    stream.add_parser(commands)

    demo = commands.add_parser("demo", help="the main job on the built-in demo data")
    demo.add_argument("--out", default="tfkfp-demo", help="working folder (default "
                      "./tfkfp-demo)")
    _add_verbose_option(demo)
    serve.add_parser(commands)
    loadtest.add_parser(commands)
    return parser


def _add_verbose_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="stream every task's output (the runner's, the component's, "
                        "TensorFlow's) to the console; without it the console gets a line "
                        "per task and each task's log goes to <run folder>/logs/<task>.log")


def _demo_data(args: argparse.Namespace) -> None:
    from tfkfp.components.common.data.demo_data import write_demo_data

    data = write_demo_data(args.directory)
    print(f"{data.rows} digits written as {data.csv} and {data.images}/")


def _demo(args: argparse.Namespace) -> None:
    from tfkfp.cli.demo import run_demo

    run_demo(args.out, args.verbose)


def _compile(args: argparse.Namespace) -> None:
    from tfkfp.pipelines import registry

    # checked before anything is written
    gpu, store = compile_options.gpu(args), compile_options.store(args)
    image = compile_options.image(args, gpu)
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
    gpu, store = compile_options.gpu(args), compile_options.store(args)
    run_id = submit.submit(args.name, parameters, args.host, args.experiment,
                           args.service_account, gpu, args.sizes,
                           image=compile_options.image(args, gpu),
                           namespace=args.namespace, token=args.token,
                           cache=not args.no_cache, token_file=args.token_file, store=store)
    print(f"started run {run_id} of {args.name!r} on {args.host}")


def _check(args: argparse.Namespace) -> int:
    return check.run_check(args, sys.stdout)


def main(argv: List[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    handlers = {"shard": shard.run, "demo-data": _demo_data, "demo": _demo,
                "compile": _compile, "run": _run, "submit": _submit, "serve": serve.run,
                "loadtest": loadtest.run, "check": _check, "stream": stream.run,
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
