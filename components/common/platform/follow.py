"""Following remote work: the one loop that waits for a job a step started outside its pod (a
TFJob or TrainJob, an InferenceService, a Vertex AI job), as Google Cloud Pipeline Components
follow theirs through one shared poller.

``follow`` reads the job's status at a steady interval until ``done(status)`` or a deadline,
and logs a line at a steady cadence while it waits. Reading survives the API's hiccups: a
transient error (a 5xx or 429 answer, a reset, refused or timed-out connection) is retried with
exponential backoff, a bounded number of times in a row; any other error (a 404, a 403) is
raised at once. When the retries run out it raises FollowGaveUp, naming the job, the attempts
and the last error. SIGTERM's SystemExit (signals.sigterm_raises) and KeyboardInterrupt pass
through untouched, so the caller stops the remote work as before.
"""

import json
import logging
import time
from typing import Callable, TypeVar

log = logging.getLogger("tfkfp")
T = TypeVar("T")

RETRIES = 5  # transient errors in a row retried before giving up (6 attempts in all)
MAX_BACKOFF_SECONDS = 60.0  # the longest wait between two attempts after an error
PROGRESS_SECONDS = 60.0  # one "still waiting" line per this much time
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})  # HTTP answers worth another try


class FollowError(RuntimeError):
    """Following a job stopped before the job was done."""


class FollowGaveUp(FollowError):
    """Reading the job's status failed with transient errors more times in a row than
    allowed; ``attempts`` and ``last_error`` say how."""

    def __init__(self, message: str, attempts: int, last_error: BaseException):
        super().__init__(message)
        self.attempts, self.last_error = attempts, last_error


class FollowTimedOut(FollowError):
    """The job was not done by the deadline; ``last`` is its last status read (or None)."""

    def __init__(self, message: str, last=None):
        super().__init__(message)
        self.last = last


def is_transient(err: BaseException) -> bool:
    """Whether another attempt may succeed: a connection reset, refused or timed out; an HTTP
    429 or 5xx from the Kubernetes API (ApiException) or a Google API (ServiceUnavailable,
    InternalServerError, TooManyRequests, DeadlineExceeded, ...); urllib3's connection
    errors."""
    if isinstance(err, (ConnectionError, TimeoutError)):
        return True
    status = _http_status(err)
    if status is not None:
        return status in TRANSIENT_STATUS or 500 <= status < 600
    try:
        from urllib3 import exceptions as u3
    except ImportError:  # pragma: no cover - the kubernetes client brings it
        return False
    return isinstance(err, (u3.ProtocolError, u3.MaxRetryError, u3.TimeoutError,
                            u3.NewConnectionError))


def _http_status(err: BaseException) -> int | None:
    """The HTTP status of a Kubernetes ApiException or a Google API error, else None."""
    modules = {klass.__module__.split(".")[0] for klass in type(err).__mro__}
    if "kubernetes" in modules:
        from kubernetes.client.exceptions import ApiException

        if isinstance(err, ApiException) and err.status:
            return int(err.status)
    if "google" in modules:
        from google.api_core import exceptions as google

        if isinstance(err, google.GoogleAPICallError) and err.code:
            return int(err.code)
    return None


def describe_error(err: BaseException) -> str:
    """One line naming an error: its type, and for an ApiException status, reason and the
    server's message rather than the whole HTTP exchange."""
    if hasattr(err, "status") and hasattr(err, "reason") and hasattr(err, "body"):
        text = f"{err.status} {err.reason}: {api_message(err)}".rstrip(": ")
    else:
        text = str(err)
    text = " ".join(f"{type(err).__name__}: {text}".split())
    return text if len(text) <= 500 else text[:497] + "..."


def api_message(err) -> str:
    """The message of an ApiException's Status body (why the server refused)."""
    try:
        return json.loads(err.body).get("message", "")
    except (TypeError, ValueError, AttributeError):
        return str(err.body or "")


def follow(what: str, read_status: Callable[[], T], done: Callable[[T], bool], *,
           interval: float, deadline: float | None = None,
           observe: Callable[[T], None] | None = None,
           expired: Callable[[T | None], BaseException] | None = None,
           describe: Callable[[T], str] | None = None,
           retries: int = RETRIES, max_backoff: float = MAX_BACKOFF_SECONDS,
           progress_every: float = PROGRESS_SECONDS,
           sleep: Callable[[float], None] = time.sleep,
           clock: Callable[[], float] = time.monotonic) -> T:
    """Read ``what``'s status every ``interval`` seconds and return the first status that is
    ``done``.

    Args:
        what: the job, as messages name it, e.g. ``TFJob team/fit-1``.
        read_status: one read of the job's status (an API call).
        done: whether a status is the end of the wait.
        interval: seconds between two reads.
        deadline: seconds from now after which a status not done raises ``expired(last
            status)`` (default FollowTimedOut); None waits as long as it takes.
        observe: called with each status read before ``done``: logs changes, raises on a
            failure the job reports.
        expired: makes the deadline's exception from the last status read (None if none).
        describe: a status in a few words, for the progress line.
        retries: transient errors in a row retried before FollowGaveUp; the waits double
            from ``interval`` up to ``max_backoff``.
        progress_every: seconds between two progress lines.
        sleep, clock: time.sleep and time.monotonic (injected in tests).
    """
    started = clock()
    give_up = None if deadline is None else started + deadline
    last: T | None = None
    failures, logged = 0, started
    while True:
        try:
            status = read_status()
        except Exception as err:  # a transient one is retried, any other re-raised
            if not is_transient(err):
                raise
            failures += 1
            if failures > retries:
                raise FollowGaveUp(
                    f"gave up following {what}: {failures} attempts in a row to read its "
                    f"status failed; the last error: {describe_error(err)}", failures,
                    err) from err
            if give_up is not None and clock() > give_up:
                raise _expired(what, deadline, expired, last) from err
            wait = min(interval * 2 ** (failures - 1), max(max_backoff, interval))
            log.warning("%s: reading its status failed (attempt %d of %d, retrying in %.3g s): "
                        "%s", what, failures, retries + 1, wait, describe_error(err))
            sleep(wait)
            continue
        if failures:
            log.info("%s: its status reads again after %d failed attempts", what, failures)
            failures = 0
        last = status
        if observe is not None:
            observe(status)
        if done(status):
            return status
        now = clock()
        if give_up is not None and now > give_up:
            raise _expired(what, deadline, expired, status)
        if now - logged >= progress_every:
            logged = now
            log.info("%s: %s after %.0f s", what,
                     describe(status) if describe else "not done", now - started)
        sleep(interval)


def _expired(what: str, deadline: float | None, expired, last) -> BaseException:
    if expired is not None:
        return expired(last)
    return FollowTimedOut(f"{what} was not done within {deadline} s", last)
