"""The one follower of remote jobs: it waits at a steady interval, survives transient API
errors with bounded retries and backoff, raises any other error at once, and names the job
when it gives up or the deadline passes. Time is a fake clock: nothing here waits."""

import logging

import pytest
import urllib3
from google.api_core import exceptions as google
from kubernetes.client.exceptions import ApiException

from tfkfp.components.common.platform.follow import (
    RETRIES,
    FollowGaveUp,
    FollowTimedOut,
    follow,
    is_transient,
)


class Clock:
    """time.monotonic and time.sleep in one: sleeping moves the clock on."""

    def __init__(self):
        self.now, self.slept = 1000.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


class Reader:
    """A job's status reads: each item is raised if it is an exception, else returned."""

    def __init__(self, *script):
        self.script, self.reads = list(script), 0

    def __call__(self):
        self.reads += 1
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


def unavailable():
    return ApiException(status=503, reason="Service Unavailable")


def run(reader, clock, **more):
    return follow("TFJob team/fit", reader, lambda status: status == "Succeeded",
                  interval=10, sleep=clock.sleep, clock=clock, **more)


@pytest.mark.parametrize("error,transient", [
    (ApiException(status=500, reason="Internal Server Error"), True),
    (ApiException(status=503, reason="Service Unavailable"), True),
    (ApiException(status=429, reason="Too Many Requests"), True),
    (ApiException(status=404, reason="Not Found"), False),
    (ApiException(status=403, reason="Forbidden"), False),
    (ApiException(status=409, reason="Conflict"), False),
    (google.ServiceUnavailable("down"), True),
    (google.InternalServerError("oops"), True),
    (google.TooManyRequests("slow down"), True),
    (google.DeadlineExceeded("late"), True),
    (google.NotFound("gone"), False),
    (google.PermissionDenied("no"), False),
    (urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104)), True),
    (urllib3.exceptions.MaxRetryError(None, "/apis", "refused"), True),
    (ConnectionResetError(104, "Connection reset by peer"), True),
    (ConnectionRefusedError(111, "Connection refused"), True),
    (TimeoutError("timed out"), True),
    (ValueError("not JSON"), False),
    (KeyError("status"), False),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v))
def test_transient_errors_are_told_from_the_others(error, transient):
    assert is_transient(error) is transient


def test_transient_errors_are_retried_with_backoff_until_the_status_reads_again():
    clock = Clock()
    errors = [unavailable(), urllib3.exceptions.ProtocolError("reset"),
              ConnectionResetError(104), google.ServiceUnavailable("down")]
    reader = Reader("Created", *errors, "Running", "Succeeded")
    assert len(errors) <= RETRIES
    assert run(reader, clock) == "Succeeded"
    assert reader.reads == 7
    # a steady interval, the waits after errors doubling from it, then steady again
    assert clock.slept == [10, 10, 20, 40, 60, 10]  # capped at MAX_BACKOFF_SECONDS


def test_the_backoff_is_capped():
    clock = Clock()
    reader = Reader(*[unavailable() for _ in range(5)], "Succeeded")
    run(reader, clock, max_backoff=25)
    assert clock.slept == [10, 20, 25, 25, 25]


def test_errors_count_in_a_row_only():
    """A good read in between starts the count again: hiccups spread over a long job never
    add up to giving up."""
    clock = Clock()
    script = []
    for _ in range(3):
        script += [unavailable()] * RETRIES + ["Running"]
    reader = Reader(*script, "Succeeded")
    assert run(reader, clock) == "Succeeded"


def test_more_transient_errors_in_a_row_than_allowed_give_up_naming_the_job_and_the_error():
    clock = Clock()
    last = ApiException(status=502, reason="Bad Gateway")
    reader = Reader("Running", *[unavailable() for _ in range(RETRIES)], last, "Succeeded")
    with pytest.raises(FollowGaveUp) as gave_up:
        run(reader, clock)
    message = str(gave_up.value)
    assert message.startswith(f"gave up following TFJob team/fit: {RETRIES + 1} attempts in "
                              "a row to read its status failed; the last error: ")
    assert message.endswith("ApiException: 502 Bad Gateway")
    assert gave_up.value.attempts == RETRIES + 1
    assert gave_up.value.last_error is last
    assert gave_up.value.__cause__ is last
    assert reader.reads == RETRIES + 2  # the one good read, then the failing ones


def test_a_fixed_bound_is_kept():
    reader = Reader(*[TimeoutError("timed out") for _ in range(3)], "Succeeded")
    with pytest.raises(FollowGaveUp, match="3 attempts in a row .* TimeoutError: timed out"):
        run(reader, Clock(), retries=2)


@pytest.mark.parametrize("error", [ApiException(status=404, reason="Not Found"),
                                   ApiException(status=403, reason="Forbidden"),
                                   google.PermissionDenied("no"), ValueError("bad")],
                         ids=["404", "403", "PermissionDenied", "ValueError"])
def test_any_other_error_is_raised_at_once(error):
    clock = Clock()
    reader = Reader("Running", error, "Succeeded")
    with pytest.raises(type(error)) as raised:
        run(reader, clock)
    assert raised.value is error
    assert reader.reads == 2 and clock.slept == [10]  # no retry, no backoff


@pytest.mark.parametrize("stop", [SystemExit("training stopped by signal 15"),
                                  KeyboardInterrupt()])
def test_a_cancel_passes_through(stop):
    """SIGTERM's SystemExit (signals.sigterm_raises) reaches the caller, which stops the job."""
    reader = Reader("Running", stop)
    with pytest.raises(type(stop)):
        run(reader, Clock())


def test_the_deadline_raises_a_timeout_naming_the_job_with_its_last_status():
    clock = Clock()
    reader = Reader(*["Running"] * 10)
    with pytest.raises(FollowTimedOut, match=r"^TFJob team/fit was not done within 25 s$") as late:
        run(reader, clock, deadline=25)
    assert late.value.last == "Running"
    assert reader.reads == 4  # at 0, 10, 20 and 30 s: the read after the deadline fails it


def test_the_deadline_can_raise_the_callers_own_error():
    seen = []

    def expired(last):
        seen.append(last)
        return RuntimeError(f"deadline passed; last {last}")

    with pytest.raises(RuntimeError, match="deadline passed; last Pending"):
        run(Reader(*["Pending"] * 10), Clock(), deadline=5, expired=expired)
    assert seen == ["Pending"]


def test_the_deadline_also_ends_a_run_of_errors():
    clock = Clock()
    reader = Reader("Running", *[unavailable() for _ in range(RETRIES)])
    with pytest.raises(FollowTimedOut) as late:
        run(reader, clock, deadline=15)
    assert late.value.last == "Running"
    assert isinstance(late.value.__cause__, ApiException)


def test_observe_sees_every_status_and_its_error_ends_the_wait():
    seen = []

    def observe(status):
        seen.append(status)
        if status == "Failed":
            raise RuntimeError("the job failed")

    with pytest.raises(RuntimeError, match="the job failed"):
        run(Reader("Created", unavailable(), "Running", "Failed", "Succeeded"), Clock(),
            observe=observe)
    assert seen == ["Created", "Running", "Failed"]


def test_progress_is_logged_at_a_steady_cadence(caplog):
    clock = Clock()
    reader = Reader(*["Running"] * 30, "Succeeded")
    with caplog.at_level(logging.INFO, logger="tfkfp"):
        run(reader, clock, progress_every=60, describe=lambda status: status.lower())
    lines = [r.getMessage() for r in caplog.records if r.name == "tfkfp"]
    assert lines == [f"TFJob team/fit: running after {s} s" for s in (60, 120, 180, 240)]


def test_retries_are_logged_with_the_error_and_the_recovery(caplog):
    with caplog.at_level(logging.INFO, logger="tfkfp"):
        run(Reader(unavailable(), "Succeeded"), Clock())
    lines = [r.getMessage() for r in caplog.records if r.name == "tfkfp"]
    assert lines == [
        f"TFJob team/fit: reading its status failed (attempt 1 of {RETRIES + 1}, retrying in "
        "10 s): ApiException: 503 Service Unavailable",
        "TFJob team/fit: its status reads again after 1 failed attempts"]

