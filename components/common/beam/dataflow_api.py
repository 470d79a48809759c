"""The two calls of Dataflow's REST API (v1b3) a step makes after launching a job:
``projects.locations.jobs.get`` to follow it and ``projects.locations.jobs.update`` with a
``requestedState`` to cancel or drain it.

A job's ``currentState`` is one of the ``JOB_STATE_*`` names of google.dataflow.v1beta3's
``JobState``. Cancelling asks for ``JOB_STATE_CANCELLED``; draining (a streaming job stops
reading, finishes what it holds, then ends) asks for ``JOB_STATE_DRAINED``, as
``gcloud dataflow jobs drain`` does.

Errors are raised as Google API errors (``google.api_core.exceptions``, by HTTP status) or
as the built-in ConnectionError / TimeoutError, which is how the shared follower
(common/platform/follow.py) tells a transient fault (retried) from a lasting one.
"""

import dataclasses
import logging
from typing import Callable, Dict
from urllib.parse import quote

from tfkfp.components.common.platform.follow import FollowTimedOut, follow

log = logging.getLogger("tfkfp")

API = "https://dataflow.googleapis.com"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
ENDED = frozenset({"JOB_STATE_DONE", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
                   "JOB_STATE_UPDATED", "JOB_STATE_DRAINED"})
CANCEL, DRAIN = "JOB_STATE_CANCELLED", "JOB_STATE_DRAINED"
STREAMING_TYPE = "JOB_TYPE_STREAMING"
REQUEST_SECONDS = 30.0  # one API call; a hung connection is a transient fault, not a hang
STOP_WAIT_SECONDS = 20.0  # within the pod's default 30 s grace period after SIGTERM


@dataclasses.dataclass(frozen=True)
class JobRef:
    """One Dataflow job: where it runs and its id."""

    project: str
    region: str
    job_id: str

    @property
    def path(self) -> str:
        return "/v1b3/projects/{}/locations/{}/jobs/{}".format(
            *(quote(part, safe="") for part in (self.project, self.region, self.job_id)))

    @property
    def resource_uri(self) -> str:
        """The URI Google Cloud Pipeline Components name a Dataflow job by."""
        return f"{API}{self.path}"

    @property
    def console_url(self) -> str:
        return (f"https://console.cloud.google.com/dataflow/jobs/{self.region}/"
                f"{self.job_id}?project={self.project}")


class DataflowJobs:
    """``jobs.get`` and ``jobs.update`` over REST.

    Args:
        credentials: google-auth credentials (application-default ones in a step); used
            unless ``session`` is given.
        base_url: the API's root; tests point it at tests/fake_dataflow.
        session: a ``requests.Session``-like object that authorises its requests itself.
        timeout: seconds one call may take.
    """

    def __init__(self, credentials=None, *, base_url: str = API, session=None,
                 timeout: float = REQUEST_SECONDS):
        if session is None:
            from google.auth.transport.requests import AuthorizedSession

            session = AuthorizedSession(credentials)
        self.base_url, self.session, self.timeout = base_url.rstrip("/"), session, timeout

    def get(self, job: JobRef) -> Dict:
        """The Job resource (``id``, ``type``, ``currentState``, ...)."""
        return self._call("GET", job)

    def request_state(self, job: JobRef, state: str) -> Dict:
        """Ask for ``state`` (JOB_STATE_CANCELLED, JOB_STATE_DRAINED); the Job answered."""
        return self._call("PUT", job, {"requestedState": state})

    def _call(self, method: str, job: JobRef, body: Dict | None = None) -> Dict:
        import requests
        from google.api_core import exceptions

        url = self.base_url + job.path
        try:
            response = self.session.request(method, url, json=body, timeout=self.timeout)
        except requests.Timeout as err:  # before ConnectionError: ConnectTimeout is both
            raise TimeoutError(f"{method} {url}: {err}") from err
        except requests.ConnectionError as err:
            raise ConnectionError(f"{method} {url}: {err}") from err
        if response.status_code >= 400:
            raise exceptions.from_http_response(response)
        return response.json()


def follow_job(jobs: DataflowJobs, job: JobRef, interval: float,
               seen: Callable[[Dict], None] = lambda status: None) -> Dict:
    """The job's resource once it has ended, each change of state logged; transient API
    faults are survived (common/platform/follow.py). ``seen`` gets every resource read."""
    last = ""

    def observe(status: Dict) -> None:
        nonlocal last
        seen(status)
        state = status.get("currentState", "JOB_STATE_UNKNOWN")
        if state != last:
            last = state
            log.info("Dataflow job %s: %s", job.job_id, state)

    return follow(f"Dataflow job {job.job_id}", lambda: jobs.get(job),
                  lambda status: status.get("currentState") in ENDED, interval=interval,
                  observe=observe, describe=lambda status: status.get("currentState", "?"))


def stop_job(jobs: DataflowJobs, job: JobRef, state: str, interval: float,
             wait_seconds: float = STOP_WAIT_SECONDS) -> str:
    """Ask Dataflow to cancel or drain the job (``state``) and wait up to ``wait_seconds``
    for it to end; its last state. Never raises: it runs while the step's own exception is
    on its way, so a refused request or lost connection is logged instead."""
    verb = "draining" if state == DRAIN else "cancelling"
    log.info("%s Dataflow job %s (%s)", verb, job.job_id, job.console_url)
    try:
        jobs.request_state(job, state)
    # Blind: the step's own error must surface, not this one (e.g. the job ended meanwhile
    # and Dataflow refuses the change with FAILED_PRECONDITION).
    except Exception as err:  # noqa: BLE001
        log.warning("%s Dataflow job %s failed: %s", verb, job.job_id, err)
        return f"unknown ({verb} was refused or not sent)"
    try:
        status = follow(f"Dataflow job {job.job_id}", lambda: jobs.get(job),
                        lambda current: current.get("currentState") in ENDED,
                        interval=interval, deadline=wait_seconds)
        state_now = status.get("currentState", "?")
    except FollowTimedOut as late:  # still draining or cancelling: Dataflow carries on
        state_now = (late.last or {}).get("currentState", f"unknown ({verb} requested)")
    except Exception as err:  # noqa: BLE001 - as above
        log.warning("reading Dataflow job %s after %s failed: %s", job.job_id, verb, err)
        return f"unknown ({verb} requested)"
    log.info("Dataflow job %s: %s", job.job_id, state_now)
    return state_now
