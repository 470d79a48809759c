"""Storage calls that survive transient faults, inside the step.

KFP's ``set_retry`` reruns a failed task whatever the failure (there is no condition), so a
step that cannot read its input for a reason that will not change (a missing file, an
unsupported scheme, no credentials) would fail three more times, 70 s of backoff apart. The
step retries instead, and only what another attempt may cure: a lost or refused connection,
a timeout, an HTTP 429 or 5xx (``follow.is_transient``, as the job followers judge them),
TensorFlow's ``Unavailable``, ``DeadlineExceeded``, ``ResourceExhausted`` and ``Aborted``,
and the S3 client's network, throttling and server errors. Anything else is raised at once.

TensorFlow's GCS filesystem and pyarrow's S3 client already retry a few times within about
two seconds; these waits (2 s doubling to 30 s) cover the longer outages KFP's retries used
to.
"""

import logging
import re
import time
from typing import Callable, TypeVar

from tfkfp.components.common.platform import follow

log = logging.getLogger("tfkfp")
T = TypeVar("T")

RETRIES = 4  # transient faults in a row retried before giving up (5 attempts in all)
FIRST_WAIT_SECONDS = 2.0
MAX_WAIT_SECONDS = 30.0
_TF_TRANSIENT = frozenset({"UnavailableError", "DeadlineExceededError",
                           "ResourceExhaustedError", "AbortedError"})
# pyarrow's S3 errors: "AWS Error NETWORK_CONNECTION during HeadObject operation: ..."
_S3_TRANSIENT = re.compile(
    r"AWS Error (NETWORK_CONNECTION|SLOW_DOWN|SERVICE_UNAVAILABLE|INTERNAL_FAILURE|"
    r"THROTTLING|REQUEST_TIMEOUT|REQUEST_LIMIT_EXCEEDED)|HTTP status (429|5\d\d)")


class StorageGaveUp(OSError):
    """A storage call failed with transient faults more times in a row than allowed."""


def is_transient(err: BaseException) -> bool:
    """Whether another attempt of a storage call may succeed (see the module docstring)."""
    if follow.is_transient(err):
        return True
    kind = type(err)
    if kind.__name__ in _TF_TRANSIENT and kind.__module__.startswith("tensorflow"):
        return True
    return isinstance(err, OSError) and bool(_S3_TRANSIENT.search(str(err)))


def call(what: str, fn: Callable[..., T], *args, retries: int | None = None,
         first_wait: float | None = None, max_wait: float | None = None,
         sleep: Callable[[float], None] = time.sleep) -> T:
    """``fn(*args)``, retried with exponential backoff while it fails with transient faults.

    Args:
        what: the call, as the log and the error name it (e.g. ``size gs://b/x.csv``).
        fn: one idempotent storage call.
        retries: transient faults in a row retried before StorageGaveUp (None: RETRIES).
        first_wait, max_wait: the first wait in seconds, doubled up to ``max_wait`` (None:
            FIRST_WAIT_SECONDS, MAX_WAIT_SECONDS, as the module has them when called).
        sleep: time.sleep (injected in tests).

    Raises:
        StorageGaveUp: every attempt failed with a transient fault (the last one chained).
        Exception: the call's own error, at once, when it is not transient.
    """
    retries = RETRIES if retries is None else retries
    first_wait = FIRST_WAIT_SECONDS if first_wait is None else first_wait
    max_wait = MAX_WAIT_SECONDS if max_wait is None else max_wait
    failures = 0
    while True:
        try:
            return fn(*args)
        except Exception as err:
            if not is_transient(err):
                raise
            failures += 1
            if failures > retries:
                raise StorageGaveUp(f"gave up on {what}: {failures} attempts in a row failed "
                                    f"with transient faults; the last: "
                                    f"{follow.describe_error(err)}") from err
            wait = min(first_wait * 2 ** (failures - 1), max_wait)
            log.warning("%s failed (attempt %d of %d, retrying in %.3g s): %s", what,
                        failures, retries + 1, wait, follow.describe_error(err))
            sleep(wait)
