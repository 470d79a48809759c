"""Dataflow's REST API (v1b3), faked on loopback as its reference describes the calls that
launch, follow and stop a job (google.dataflow.v1beta3 ``JobsV1Beta3``; the JSON mapping
writes fields in lowerCamelCase and enums by name):

- ``POST /v1b3/projects/{projectId}/locations/{location}/jobs`` (jobs.create, which Beam's
  DataflowRunner sends): the Job as sent is kept in ``created``; the answer is the Job with
  a new ``id`` (Dataflow's ``YYYY-MM-DD_HH_MM_SS-N`` form) and the sender's
  ``clientRequestId``; the new job follows ``create_script``;
- ``GET /v1b3/projects/{projectId}/locations/{location}/jobs/{jobId}`` (jobs.get): the
  Job: ``id``, ``projectId``, ``name``, ``type`` (JOB_TYPE_BATCH / JOB_TYPE_STREAMING),
  ``currentState``, ``currentStateTime``, ``createTime``, ``location``, ``requestedState``
  once one was asked for;
- ``PUT`` on the same path (jobs.update) with a Job body: only ``requestedState`` is
  honoured, as the service does for a running job: JOB_STATE_CANCELLED (the job goes
  CANCELLING, then CANCELLED), JOB_STATE_DRAINED or JOB_STATE_DRAINING (DRAINING, then
  DRAINED) and JOB_STATE_DONE; other states are INVALID_ARGUMENT, and any change to a job
  that has ended is FAILED_PRECONDITION.

Each job follows a script: one step per jobs.get, a state name or an HTTP status (e.g.
503) answered with Google's error body; the last step repeats. Requests without a bearer
token get 401. Every request is recorded (``requests``: method, path, body, authorization).
No network beyond loopback."""

import datetime
import http.server
import json
import threading
from typing import Dict, List, Sequence

from threaded_server import JSON_UTF8, answering, send_json

PROJECT, REGION = "tfkfp-test", "europe-west4"
ENDED = {"JOB_STATE_DONE", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_UPDATED",
         "JOB_STATE_DRAINED"}
AFTER_REQUEST = {"JOB_STATE_CANCELLED": ["JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"],
                 "JOB_STATE_DRAINED": ["JOB_STATE_DRAINING", "JOB_STATE_DRAINED"],
                 "JOB_STATE_DRAINING": ["JOB_STATE_DRAINING", "JOB_STATE_DRAINED"],
                 "JOB_STATE_DONE": ["JOB_STATE_DONE"]}
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
Step = str | int


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class FakeDataflow(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, project: str = PROJECT, region: str = REGION):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.project, self.region = project, region
        self.lock = threading.Lock()
        self.jobs: Dict[str, Dict] = {}
        self.scripts: Dict[str, List[Step]] = {}
        self.requests: List[Dict] = []
        self.created: Dict[str, Dict] = {}
        self.create_script: List[Step] = ["JOB_STATE_PENDING", "JOB_STATE_RUNNING",
                                          "JOB_STATE_DONE"]

    @property
    def url(self) -> str:
        """The API's root, as ``https://dataflow.googleapis.com``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def add_job(self, job_id: str, script: Sequence[Step], streaming: bool = False) -> None:
        """A job that answers ``script`` to successive jobs.get, its last step repeating."""
        with self.lock:
            self.scripts[job_id] = list(script)
            self.jobs[job_id] = {
                "id": job_id, "projectId": self.project, "name": f"tfkfp-{job_id}",
                "type": "JOB_TYPE_STREAMING" if streaming else "JOB_TYPE_BATCH",
                "currentState": "JOB_STATE_QUEUED", "currentStateTime": _now(),
                "createTime": _now(), "location": self.region}

    def create(self, body: Dict) -> Dict:
        """The answer to a jobs.create of ``body``."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d_%H_%M_%S")
        job_id = f"{stamp}-{len(self.created) + 1}"
        # Beam's REST client writes enums as numbers: JOB_TYPE_STREAMING is 2.
        self.add_job(job_id, self.create_script,
                     streaming=body.get("type") in ("JOB_TYPE_STREAMING", 2))
        with self.lock:
            self.created[job_id] = body
            job = self.jobs[job_id]
            job.update({k: body[k] for k in ("name", "clientRequestId", "labels")
                        if k in body})
            return dict(job)

    def updates(self, job_id: str) -> List[Dict]:
        """The bodies of the jobs.update requests for a job."""
        with self.lock:
            return [r["body"] for r in self.requests
                    if r["method"] == "PUT" and r["path"].endswith(f"/jobs/{job_id}")]

    def next_step(self, job_id: str) -> Step:
        with self.lock:
            script = self.scripts[job_id]
            step = script.pop(0) if len(script) > 1 else script[0]
            if isinstance(step, str) and step != self.jobs[job_id]["currentState"]:
                self.jobs[job_id].update(currentState=step, currentStateTime=_now())
            return step

    def request_state(self, job_id: str, wanted: str) -> tuple:
        """(HTTP status, body) of a jobs.update asking for ``wanted``."""
        with self.lock:
            job = self.jobs[job_id]
            if job["currentState"] in ENDED:
                return 400, _error(400, f"Workflow modification failed. Causes: (job "
                                        f"{job_id}): the job is in state "
                                        f"{job['currentState']}.", "FAILED_PRECONDITION")
            if wanted not in AFTER_REQUEST:
                return 400, _error(400, f"Invalid value at 'job.requested_state' "
                                        f"({wanted!r}): only {sorted(AFTER_REQUEST)} "
                                        "may be requested.")
            job["requestedState"] = wanted
            self.scripts[job_id] = list(AFTER_REQUEST[wanted])
            return 200, dict(job)


def _error(code: int, message: str, status: str = "") -> Dict:
    return {"error": {"code": code, "message": message,
                      "status": status or _STATUS.get(code, "UNKNOWN")}}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        job_id = self._job_id(None)
        if job_id is None:
            return
        step = self.server.next_step(job_id)
        if isinstance(step, int):
            return self._answer(step, _error(step, f"The service is currently unavailable "
                                                   f"(scripted {step})."))
        with self.server.lock:
            job = dict(self.server.jobs[job_id])
        self._answer(200, job)

    def do_POST(self):
        body = self._body()
        if body is None or self._job_id(body, creating=True) is None:
            return
        self._answer(200, self.server.create(body))

    def do_PUT(self):
        body = self._body()
        if body is None:
            return
        job_id = self._job_id(body)
        if job_id is None:
            return
        if "requestedState" not in body:
            return self._answer(400, _error(400, "only requestedState changes are faked"))
        self._answer(*self.server.request_state(job_id, body["requestedState"]))

    def _body(self):
        length = int(self.headers.get("Content-Length", 0))
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._answer(400, _error(400, "Invalid JSON payload received."))
            return None

    def _job_id(self, body, creating: bool = False):
        """The job a request names, "" for a create (recording the request), or None once
        refused."""
        server = self.server
        with server.lock:
            server.requests.append({"method": self.command, "path": self.path, "body": body,
                                    "authorization": self.headers.get("Authorization", "")})
        prefix = f"/v1b3/projects/{server.project}/locations/{server.region}/jobs/"
        path = self.path.split("?", 1)[0] + ("/" if creating else "")
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            self._answer(401, _error(401, "Request is missing required authentication "
                                          "credential."))
        elif creating and path == prefix:
            return ""
        elif not path.startswith(prefix) or path[len(prefix):] not in server.jobs:
            self._answer(404, _error(404, f"Information about job {path[len(prefix):]} "
                                          "could not be found in our system."))
        else:
            return path[len(prefix):]
        return None

    def _answer(self, code: int, body: Dict):
        send_json(self, code, body, {"Content-Type": JSON_UTF8})


def serving(**kwargs):
    """A FakeDataflow answering on loopback for the block's length."""
    return answering(FakeDataflow(**kwargs))
