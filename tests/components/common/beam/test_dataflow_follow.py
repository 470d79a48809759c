"""Following a launched Dataflow job through the REST API of tests/fake_dataflow, and
stopping it when the step is stopped. The launch itself (Beam's DataflowRunner staging to
gs:// and creating the job) is the injected ``launch``; what follows it runs for real."""

import json
import logging
import signal
import subprocess
import sys
import time

import pytest
from fake_dataflow.service import PROJECT, REGION, serving
from google.api_core import exceptions
from google.oauth2.credentials import Credentials

from tfkfp.components.common.beam.dataflow import (
    DataflowJobError,
    DataflowOutcome,
    DataflowSettings,
    gcp_resources,
    run_on_dataflow,
)
from tfkfp.components.common.beam.dataflow_api import DataflowJobs, JobRef, stop_job
from tfkfp.components.common.platform.follow import FollowGaveUp

SETTINGS = DataflowSettings(PROJECT, REGION, "gs://tfkfp-test-bucket/tmp")


def console(job_id):
    return (f"https://console.cloud.google.com/dataflow/jobs/{REGION}/{job_id}"
            f"?project={PROJECT}")


@pytest.fixture
def fake():
    with serving() as server:
        yield server


def client(fake):
    return DataflowJobs(Credentials(token="test-token"), base_url=fake.url, timeout=5)


def run(fake, job_id, path, **kwargs):
    return run_on_dataflow(None, SETTINGS, str(path), client=client(fake),
                           launch=lambda pipeline: job_id, poll_seconds=0.01, **kwargs)


def test_a_job_is_followed_to_done_through_a_transient_503(fake, tmp_path, caplog):
    fake.add_job("2026-11-28_01-1", ["JOB_STATE_PENDING", "JOB_STATE_RUNNING", 503,
                                     "JOB_STATE_RUNNING", "JOB_STATE_DONE"])
    caplog.set_level(logging.INFO, logger="tfkfp")
    outcome = run(fake, "2026-11-28_01-1", tmp_path / "gcp_resources")
    assert outcome == DataflowOutcome("2026-11-28_01-1", "JOB_STATE_DONE",
                                      console("2026-11-28_01-1"))
    assert (tmp_path / "gcp_resources").read_text() == gcp_resources(PROJECT, REGION,
                                                                     "2026-11-28_01-1")
    changes = [r.getMessage() for r in caplog.records
               if r.getMessage().startswith("Dataflow job 2026-11-28_01-1: JOB_STATE")]
    assert changes == [f"Dataflow job 2026-11-28_01-1: JOB_STATE_{s}"
                       for s in ("PENDING", "RUNNING", "DONE")]
    assert "reading its status failed (attempt 1 of 6" in caplog.text
    assert "503" in caplog.text and "ServiceUnavailable" in caplog.text
    gets = [r for r in fake.requests if r["method"] == "GET"]
    assert len(gets) == 5 and not fake.updates("2026-11-28_01-1")
    assert {r["authorization"] for r in fake.requests} == {"Bearer test-token"}


@pytest.mark.parametrize("ending", ["JOB_STATE_FAILED", "JOB_STATE_CANCELLED"])
def test_a_failed_or_cancelled_job_raises_naming_it_and_its_console_page(fake, tmp_path,
                                                                         ending):
    fake.add_job("job-9", ["JOB_STATE_RUNNING", ending])
    with pytest.raises(DataflowJobError) as raised:
        run(fake, "job-9", tmp_path / "gcp_resources")
    assert str(raised.value) == (f"Dataflow job job-9 ended in {ending}; its logs and "
                                 f"errors: {console('job-9')}")
    assert json.loads((tmp_path / "gcp_resources").read_text())["resources"][0][
        "resourceUri"].endswith("/jobs/job-9")
    assert not fake.updates("job-9"), "an ended job is not cancelled"


def test_a_drained_streaming_job_ends_the_step_cleanly(fake, tmp_path):
    fake.add_job("stream-1", ["JOB_STATE_RUNNING", "JOB_STATE_DRAINING",
                              "JOB_STATE_DRAINED"], streaming=True)
    assert run(fake, "stream-1", tmp_path / "r", streaming=True).state == "JOB_STATE_DRAINED"


def test_without_follow_the_step_returns_once_the_job_is_named(fake, tmp_path):
    fake.add_job("job-2", ["JOB_STATE_RUNNING"])
    outcome = run(fake, "job-2", tmp_path / "r", follow=False)
    assert outcome == DataflowOutcome("job-2", "", console("job-2"))
    assert (tmp_path / "r").exists() and not fake.requests


def test_when_following_gives_up_the_job_is_cancelled(fake, tmp_path):
    """A lasting outage of the API fails the step; the job must not run on unwatched
    (KFP's retry would start a second one)."""
    fake.add_job("job-3", [503] * 6 + ["JOB_STATE_RUNNING"])
    with pytest.raises(FollowGaveUp, match="gave up following Dataflow job job-3: 6 "
                                           "attempts in a row"):
        run(fake, "job-3", tmp_path / "r")
    assert fake.updates("job-3") == [{"requestedState": "JOB_STATE_CANCELLED"}]
    assert fake.jobs["job-3"]["currentState"] == "JOB_STATE_CANCELLED"


def test_an_unknown_job_is_not_retried_and_its_cancel_failure_only_logged(fake, tmp_path,
                                                                          caplog):
    with pytest.raises(exceptions.NotFound, match="Information about job job-x could not"):
        run(fake, "job-x", tmp_path / "r")
    assert [r["method"] for r in fake.requests] == ["GET", "PUT"]
    assert "cancelling Dataflow job job-x failed: 404" in caplog.text


def test_stopping_a_job_that_has_ended_reports_its_state(fake):
    fake.add_job("job-4", ["JOB_STATE_DONE"])
    jobs, job = client(fake), JobRef(PROJECT, REGION, "job-4")
    assert jobs.get(job)["currentState"] == "JOB_STATE_DONE"
    state = stop_job(jobs, job, "JOB_STATE_CANCELLED", interval=0.01)
    assert state == "unknown (cancelling was refused or not sent)"


FOLLOW = """
import logging, sys
from google.oauth2.credentials import Credentials
from tfkfp.components.common.beam.dataflow import DataflowSettings, run_on_dataflow
from tfkfp.components.common.beam.dataflow_api import DataflowJobs
logging.basicConfig(level=logging.INFO)
url, job_id, path, streaming = sys.argv[1:]
jobs = DataflowJobs(Credentials(token="test-token"), base_url=url, timeout=5)
run_on_dataflow(None, DataflowSettings("tfkfp-test", "europe-west4", "gs://tfkfp-test-b/tmp"),
                path, streaming=streaming == "1", client=jobs, launch=lambda p: job_id,
                poll_seconds=0.05)
"""


@pytest.mark.parametrize("streaming_job, streaming_flag, requested, verb", [
    (False, False, "JOB_STATE_CANCELLED", "cancel"),
    (True, True, "JOB_STATE_DRAINED", "drain"),
    (True, False, "JOB_STATE_DRAINED", "drain"),  # Beam made it streaming (unbounded)
], ids=["batch-cancelled", "streaming-drained", "inferred-streaming-drained"])
def test_sigterm_stops_the_job_and_exits_promptly(fake, tmp_path, streaming_job,
                                                  streaming_flag, requested, verb):
    fake.add_job("job-5", ["JOB_STATE_RUNNING"], streaming=streaming_job)
    path = tmp_path / "gcp_resources"
    step = subprocess.Popen([sys.executable, "-c", FOLLOW, fake.url, "job-5", str(path),
                             "1" if streaming_flag else "0"], stderr=subprocess.PIPE,
                            text=True)
    try:
        _wait_until(lambda: path.exists() and len(fake.requests) >= 2, step)
        stopped = time.monotonic()
        step.send_signal(signal.SIGTERM)
        _, stderr = step.communicate(timeout=20)
    finally:
        if step.poll() is None:
            step.kill()
    assert time.monotonic() - stopped < 5, stderr[-2000:]
    assert step.returncode == 1, stderr[-2000:]
    assert fake.updates("job-5") == [{"requestedState": requested}]
    assert stderr.strip().splitlines()[-1] == (
        f"Dataflow job stopped by signal {int(signal.SIGTERM)}: {verb} requested for "
        f"Dataflow job job-5 (now {requested}); {console('job-5')}")


def _wait_until(ready, process, timeout=60):
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise AssertionError(f"the step ended early:\n{process.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready within {timeout} s")
        time.sleep(0.02)


def test_the_fake_refuses_what_dataflow_refuses(fake):
    """The fake's own rules: no token, an unknown job, a state that cannot be asked for."""
    import requests

    fake.add_job("job-6", ["JOB_STATE_RUNNING"])
    url = f"{fake.url}{JobRef(PROJECT, REGION, 'job-6').path}"
    assert requests.get(url, timeout=5).status_code == 401
    bad = client(fake).session.put(url, json={"requestedState": "JOB_STATE_RUNNING"},
                                   timeout=5)
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    with pytest.raises(exceptions.NotFound, match="404 GET .*/jobs/job-7"):
        client(fake).get(JobRef(PROJECT, REGION, "job-7"))
