"""What the Vertex AI paths share (train's ``vertex`` launcher, vertex_batch_predict, tune's
``vertex`` engine): naming the job in ``gcp_resources`` and cancelling it when the step is
stopped (``cancelled_if_stopped``).

``gcp_resources`` is the output parameter by which Google Cloud Pipeline Components tell
Vertex AI Pipelines and the consoles which cloud resource a step runs: a ``GcpResources``
message as JSON, ``{"resources": [{"resourceType": "CustomJob", "resourceUri":
"https://<location>-aiplatform.googleapis.com/v1/<job name>"}]}``. Vertex AI Pipelines links
the job from the step and cancels it when the run is cancelled.
"""

import contextlib
import json
import logging
import os
import re
from typing import Callable, Iterable, Iterator, Tuple

from tfkfp.components.common.platform.follow import FollowTimedOut, follow
from tfkfp.components.common.platform.signals import sigterm_raises

log = logging.getLogger("tfkfp")

ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
         "JOB_STATE_EXPIRED")
CANCEL_WAIT_SECONDS = 20.0  # within the pod's default 30 s grace period after SIGTERM
_LOCATION = re.compile(r"projects/[^/]+/locations/([^/]+)/")


def resource_uri(name: str) -> str:
    """The URI Vertex AI Pipelines reads for a resource name such as
    ``projects/p/locations/us-central1/customJobs/7``."""
    found = _LOCATION.match(name)
    if not found:
        raise ValueError(f"Vertex AI resource name {name!r} does not start with "
                         "projects/<project>/locations/<location>/")
    return f"https://{found.group(1)}-aiplatform.googleapis.com/v1/{name}"


def write_gcp_resources(path: str, resources: Iterable[Tuple[str, str]] = ()) -> None:
    """Write ``gcp_resources`` at ``path``: one entry per (resource type, resource name),
    e.g. ("BatchPredictionJob", "projects/p/locations/r/batchPredictionJobs/9"); none gives
    an empty list (the step ran nothing on Vertex AI)."""
    body = {"resources": [{"resourceType": kind, "resourceUri": resource_uri(name)}
                          for kind, name in resources]}
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        json.dump(body, f)


def cancel(kind: str, name: str, send_cancel: Callable[[str], object],
           get_state: Callable[[str], str], wait_seconds: float = CANCEL_WAIT_SECONDS,
           poll_seconds: float = 2.0) -> str:
    """Ask Vertex AI to cancel a job and wait up to ``wait_seconds`` for it to end; return its
    last state. Never raises (it runs while another exception is on its way): a refused
    cancel or lost connection is logged and its state is reported as unknown."""
    log.info("cancelling Vertex AI %s %s", kind, name)
    try:
        send_cancel(name)
    # Blind: the step's own error is on its way and must surface, not this one (e.g. the
    # job ended meanwhile and the cancel is refused with FailedPrecondition).
    except Exception as err:  # noqa: BLE001
        log.warning("cancelling %s %s failed: %s", kind, name, err)
        return "unknown (the cancel request failed)"
    try:
        state = follow(f"Vertex AI {kind} {name}", lambda: get_state(name),
                       lambda current: current in ENDED, interval=poll_seconds,
                       deadline=wait_seconds)
    except FollowTimedOut as late:  # still cancelling, or never read (a lasting hiccup)
        state = late.last or "unknown (cancel requested)"
    except Exception as err:  # noqa: BLE001 - as above
        log.warning("reading %s %s after the cancel failed: %s", kind, name, err)
        return "unknown (cancel requested)"
    log.info("%s %s: %s", kind, name, state)
    return state


class StartedJob:
    """The job a ``cancelled_if_stopped`` block creates: ``created`` names it once it
    exists."""

    def __init__(self, kind: str, gcp_resources: str):
        self.kind, self.gcp_resources, self.name = kind, gcp_resources, ""

    def created(self, name: str) -> None:
        """The job exists: cancel it if the block is stopped from now on, and name it in
        ``gcp_resources`` (a path; empty: nowhere)."""
        self.name = name
        if self.gcp_resources:
            write_gcp_resources(self.gcp_resources, [(self.kind, name)])


@contextlib.contextmanager
def cancelled_if_stopped(what: str, kind: str, gcp_resources: str,
                         send_cancel: Callable[[str], object],
                         get_state: Callable[[str], str]) -> Iterator[StartedJob]:
    """A block that creates a Vertex AI job of ``kind`` and calls ``job.created(name)`` once
    it exists. SIGTERM inside it raises (signals.sigterm_raises(``what``)), set before the
    job is created so a cancel never leaves it running; any exception after ``created``
    cancels the job (``cancel``) and goes on, a SIGTERM's SystemExit naming the job and the
    state it was left in."""
    job = StartedJob(kind, gcp_resources)
    with sigterm_raises(what):
        try:
            yield job
        except BaseException as stopped:
            if not job.name:
                raise
            state = cancel(kind, job.name, send_cancel, get_state)
            if isinstance(stopped, SystemExit):
                raise SystemExit(f"{stopped}: cancelled Vertex AI {kind} {job.name} "
                                 f"(now {state})") from None
            raise
