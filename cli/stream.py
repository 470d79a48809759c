"""``tfkfp stream``: predictions for a Pub/Sub stream, on this machine (Beam's streaming
DirectRunner) or launched on Dataflow, until ``--max-messages``, ``--duration`` or Ctrl-C.

It prints a progress line every few seconds (messages in, predicted, dead-lettered, rate)
and, when it stops, the counts and how many rows pulled may be unfinished: the local runner
acknowledges a message when it pulls it, so a kill loses the rows in flight.
"""

import argparse
import json
import sys

from tfkfp.cli.option_flags import add_flag
from tfkfp.components.common.endpoint.options import DEFAULT_PROTOCOL, called_protocols


def add_parser(commands) -> None:
    from tfkfp.components.stream_predict.options import StreamOptions as Stream

    stream = commands.add_parser(
        "stream", help="predict the rows of a Pub/Sub subscription, one message per row",
        description="Predict the rows of a Pub/Sub subscription with a tfkfp model in an "
        "Apache Beam streaming job: one prediction message per row to --output-topic, each "
        "row that cannot be predicted to --dead-letter-topic naming why. Set "
        "PUBSUB_EMULATOR_HOST to use the Pub/Sub emulator.")
    stream.add_argument("model", nargs="?", default="",
                        help="a tfkfp SavedModel or TFLite bundle directory (with "
                        "--endpoint-url: only its schema is read, and it may be left out "
                        "when the endpoint's metadata lists its inputs)")
    add_flag(stream, Stream, "subscription", required=True, help=Stream.meaning(
        "subscription") + ": a message is one row (a JSON object) or several (a JSON array)")
    for name in ("output_topic", "dead_letter_topic"):
        add_flag(stream, Stream, name, required=True)
    add_flag(stream, Stream, "keys", nargs="*")
    for name in ("top_k", "max_batch_size"):
        add_flag(stream, Stream, name)
    add_flag(stream, Stream, "max_batch_wait_s", "--max-batch-wait", metavar="SECONDS")
    add_flag(stream, Stream, "max_messages", metavar="N")
    add_flag(stream, Stream, "duration_s", "--duration", metavar="SECONDS")
    add_flag(stream, Stream, "drain_s", "--drain", metavar="SECONDS")
    stream.add_argument("--runner", default="direct", choices=("direct", "dataflow"),
                        help="direct: here, until a limit or Ctrl-C; dataflow: launch the "
                        "job and return")
    endpoint = stream.add_argument_group(
        "endpoint", "predict through a serving endpoint instead of loading the model in the "
        "job: one request a batch of --max-batch-size rows")
    endpoint.add_argument("--endpoint-url", default="", metavar="URL",
                          help="the server's base URL (tfkfp serve, KServe, any Open "
                          "Inference Protocol or KServe v1 server) or a Vertex AI Endpoint")
    endpoint.add_argument("--endpoint-model", default="model", metavar="NAME")
    endpoint.add_argument("--endpoint-protocol", default=DEFAULT_PROTOCOL,
                          choices=called_protocols())  # the table, read as the parser is built
    endpoint.add_argument("--endpoint-token-file", default="", metavar="PATH",
                          help="a file holding a bearer token")
    endpoint.add_argument("--endpoint-token-env", default="", metavar="VARIABLE",
                          help="an environment variable holding a bearer token")
    endpoint.add_argument("--endpoint-retries", type=int, default=8, metavar="N")
    endpoint.add_argument("--endpoint-timeout", type=float, default=120.0,
                          metavar="SECONDS", help="how long to wait for each read of an "
                          "answer")
    stream.add_argument("--beam-options", default="{}", type=json.loads, metavar="JSON",
                        help='the runner\'s settings, e.g. {"project": "p", "region": '
                        '"europe-west4", "temp_location": "gs://b/tmp"}')


def run(args: argparse.Namespace) -> None:
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # before the job's own lines, not among them
    from tfkfp.components.stream_predict.core import stream_predict
    from tfkfp.components.stream_predict.options import StreamOptions, stream_endpoint

    options = StreamOptions.of(vars(args))
    endpoint = stream_endpoint(args.endpoint_url, args.endpoint_model, args.endpoint_protocol,
                               {}, args.endpoint_token_file, args.endpoint_token_env,
                               args.endpoint_retries, args.endpoint_timeout,
                               args.max_batch_size)
    if endpoint is None and not args.model:  # a usage error: exit 2, as argparse's
        print("tfkfp stream: error: give a model, or --endpoint-url to predict through a "
              "serving endpoint", file=sys.stderr)
        raise SystemExit(2)
    result = stream_predict(args.model, options, args.runner, args.beam_options,
                            endpoint=endpoint)
    if result.job_id:
        print(f"Dataflow job {result.job_id} launched")
    else:
        print(result.line())
    sys.stdout.flush()
