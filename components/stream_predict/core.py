"""Streaming prediction: a Beam streaming job (stream.py) from a Pub/Sub subscription to an
output and a dead-letter topic, on the runner chosen (common.beam.runners).

Locally (``direct``: Beam's BundleBasedDirectRunner) the job runs in this process until
``max_messages`` were handled, ``duration_s`` passed, or SIGINT/SIGTERM; then it stops
pulling, waits up to ``drain_s`` for the rows already pulled to be written, and is
cancelled. The DirectRunner acknowledges a message when it pulls it and cannot drain, so a
kill loses the rows in flight: the result counts the rows pulled but not yet written
(``unfinished``). On Dataflow the step launches the job, writes its ``gcp_resources`` and
returns (a stream outlives a pipeline run), or with ``follow`` stays and drains it on
SIGTERM; Dataflow acknowledges a message once its first fused stage has committed, so a
worker crash loses nothing.
"""

import dataclasses
import hashlib
import signal
import threading
import time
from typing import Dict, List

from tfkfp.components.common.beam.rows import model_schema
from tfkfp.components.common.beam.runners import check_runner
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.endpoint.options import EndpointOptions
from tfkfp.components.common.platform import progress, vertex_jobs
from tfkfp.components.common.platform.progress import log
from tfkfp.components.stream_predict.errors import StreamInputError
from tfkfp.components.stream_predict.options import (
    StreamOptions,
    check_runner_fits,
)

POLL_S = 0.5  # how often a local run reads its counters
REPORT_S = 5.0  # how often it logs its progress line


@dataclasses.dataclass(frozen=True)
class StreamResult:
    runner: str
    messages: int = 0
    rows: int = 0
    predicted: int = 0  # prediction messages written to the output topic
    dead_lettered: int = 0  # dead letters written
    seconds: float = 0.0
    stopped_by: str = ""  # max_messages, duration, signal, job ended or launched
    job_id: str = ""

    @property
    def unfinished(self) -> int:
        """Rows pulled whose prediction or dead letter was not written when the job
        stopped."""
        return max(0, self.rows - self.predicted - self.dead_lettered)

    def metadata(self) -> Dict:
        return {**dataclasses.asdict(self), "unfinished": self.unfinished,
                "messages_per_second": round(self.messages / max(self.seconds, 1e-9), 1)}

    def line(self) -> str:
        return (f"{self.messages:,} messages in, {self.predicted:,} predicted, "
                f"{self.dead_lettered:,} dead-lettered, {self.unfinished:,} may be "
                f"unfinished ({self.stopped_by}, {self.seconds:.0f} s)")


def stream_predict(model_uri: str, options: StreamOptions, runner: str = "dataflow",
                   beam_options: Dict[str, str] | None = None, gcp_resources: str = "",
                   follow: bool = False, endpoint: EndpointOptions | None = None
                   ) -> StreamResult:
    """Run the stream; see the module docstring. ``endpoint``: predict through this
    serving endpoint instead of loading the model in the job (``model_uri`` then only
    names the columns sent, and may be "" when the endpoint's metadata lists them)."""
    import apache_beam as beam

    from tfkfp.components.common.beam.runners import pipeline_options
    from tfkfp.components.stream_predict.pubsub import check_exists
    from tfkfp.components.stream_predict.stream import build

    settings = dict(beam_options or {})
    columns = _check(model_uri, options, runner, settings, endpoint)
    check_exists(options)
    if gcp_resources:  # none until a Dataflow job is launched, which names itself there
        vertex_jobs.write_gcp_resources(gcp_resources)
    pipeline = beam.Pipeline(options=pipeline_options(runner, settings, _job_name(options),
                                                      streaming=True))
    build(pipeline, options, model_uri, options.id_label, local=runner == "direct",
          endpoint=endpoint, columns=columns)
    if runner == "dataflow":
        return _on_dataflow(pipeline, settings, gcp_resources, follow)
    return _run_here(pipeline, options, runner)


def _check(model_uri: str, options: StreamOptions, runner: str, settings: Dict,
           endpoint: EndpointOptions | None) -> List[Column]:
    """Everything refused before any work; the columns each row is encoded into."""
    try:
        check_runner(runner, settings)
    except ValueError as err:
        raise StreamInputError(str(err)) from None
    check_runner_fits(options, runner)
    if endpoint is not None:
        return _endpoint_columns(model_uri, endpoint)
    try:
        return model_schema(model_uri).features
    except (ValueError, OSError) as err:
        raise StreamInputError(f"model {model_uri}: {err}") from None


def _endpoint_columns(model_uri: str, endpoint: EndpointOptions) -> List[Column]:
    """The endpoint answers ready (checked now, not at the first batch); the columns its
    model takes: the model artifact's schema when given, else the endpoint's metadata."""
    from tfkfp.components.common.beam.endpoint_handler import connect_once, endpoint_columns

    try:
        connect_once(endpoint)
        if not model_uri:
            return endpoint_columns(endpoint)
    except (ValueError, OSError) as err:  # EndpointInputError is a ValueError
        raise StreamInputError(str(err)) from None
    try:
        return model_schema(model_uri).features
    except (ValueError, OSError) as err:
        raise StreamInputError(f"model {model_uri}: {err}") from None


def _on_dataflow(pipeline, settings: Dict, gcp_resources: str, follow: bool) -> StreamResult:
    from tfkfp.components.common.beam import dataflow

    started = time.monotonic()
    outcome = dataflow.run_on_dataflow(pipeline, dataflow.dataflow_settings(settings),
                                       gcp_resources, follow=follow, streaming=True)
    log.info("streaming job %s: %s (%s)", outcome.job_id, outcome.state, outcome.console_url)
    return StreamResult("dataflow", seconds=time.monotonic() - started,
                        stopped_by="job ended" if follow else "launched",
                        job_id=outcome.job_id)


def _run_here(pipeline, options: StreamOptions, runner: str) -> StreamResult:
    """Run until a limit or a signal, drain what was pulled, cancel."""
    from tfkfp.components.stream_predict.stream import local_counts

    local_counts(reset=True)
    started = time.monotonic()
    stop = _Stop()
    result = pipeline.run()
    reported = started
    try:
        with stop.on_signals():
            while True:
                counts = _counts()
                now = time.monotonic()
                reason = stop.reason or _limit(options, counts, now - started)
                if reason or _ended(result):
                    reason = reason or "job ended"
                    break
                if now - reported >= REPORT_S:
                    _report(counts, now - started)
                    reported = now
                time.sleep(POLL_S)
            counts = _drain(result, options.drain_s)
    finally:
        if not _ended(result):
            result.cancel()
    return StreamResult(runner, counts["messages"], counts["rows"],
                        counts["predictions_written"], counts["dead_letters_written"],
                        seconds=time.monotonic() - started, stopped_by=reason)


def _counts() -> Dict[str, int]:
    """The local run's counts so far (stream.local_counts: this process's own)."""
    from tfkfp.components.stream_predict.stream import local_counts

    return local_counts()


def _limit(options: StreamOptions, counts: Dict[str, int], elapsed: float) -> str:
    if options.max_messages and counts["messages"] >= options.max_messages:
        return "max_messages"
    if options.duration_s and elapsed >= options.duration_s:
        return "duration"
    return ""


def _drain(result, seconds: float) -> Dict[str, int]:
    """Counts once every row pulled is written, or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        counts = _counts()
        done = _written(counts) >= counts["rows"]
        if done or time.monotonic() >= deadline or _ended(result):
            return counts
        time.sleep(POLL_S)


def _written(counts: Dict[str, int]) -> int:
    """Messages on the two topics: a row's answer, or its dead letter, once written."""
    return counts["predictions_written"] + counts["dead_letters_written"]


def _ended(result) -> bool:
    return str(result.state).rsplit(".", 1)[-1] in ("DONE", "FAILED", "CANCELLED",
                                                      "STOPPED", "DRAINED")


def _report(counts: Dict[str, int], elapsed: float) -> None:
    progress.report("streaming", counts["messages"], "messages", elapsed, figures={
        "predicted": f"{counts['predicted']:,}", "dead-lettered": f"{counts['dead_lettered']:,}"})


def _job_name(options: StreamOptions) -> str:
    """A Dataflow-valid job name telling the subscription apart."""
    digest = hashlib.sha256(options.subscription.encode()).hexdigest()[:10]
    return f"tfkfp-stream-predict-{int(time.time())}-{digest}"


class _Stop:
    """SIGINT or SIGTERM asks the local run to stop pulling and drain (the main thread's
    handlers only; elsewhere the run stops at its limits)."""

    def __init__(self):
        self.reason = ""

    def on_signals(self):
        import contextlib

        @contextlib.contextmanager
        def handlers():
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            def asked(signum, _frame):
                self.reason = "signal"
            old = {s: signal.signal(s, asked) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)

        return handlers()
