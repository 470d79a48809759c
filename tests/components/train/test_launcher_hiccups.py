"""The launchers follow their jobs through common/platform/follow.py: a TFJob, a TrainJob or a
Vertex AI CustomJob survives transient API errors while it runs, a lasting outage gives up
naming the job and the last error (and stops the job), and any other error is raised at
once. The APIs are fakes that answer from a script."""

import pytest
import urllib3
from google.api_core import exceptions as google
from kubernetes.client.exceptions import ApiException
from scripted_kube import ScriptedObjects, unavailable

from tfkfp.components.common.platform.follow import RETRIES, FollowGaveUp
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train.errors import VertexJobFailed
from tfkfp.components.train.launchers import job, tfjob, trainjob, vertex

LAUNCHERS = {"tfjob": (tfjob, "Succeeded"), "trainjob": (trainjob, "Complete")}


def condition(kind):
    return {"type": kind, "status": "True", "reason": kind}


class FakeCore:
    def list_namespaced_pod(self, namespace, label_selector):
        return type("Pods", (), {"items": []})()


@pytest.fixture
def kube_api(monkeypatch):
    """Install a scripted CustomObjectsApi; returns a function taking the script."""
    from kubernetes import client

    made = {}

    def install(*script):
        made["objects"] = ScriptedObjects(script)
        monkeypatch.setattr(client, "CustomObjectsApi", lambda api: made["objects"])
        monkeypatch.setattr(client, "CoreV1Api", lambda api: FakeCore())
        return made["objects"]

    return install


def launch(launcher):
    module, _ = LAUNCHERS[launcher]
    options = job.parse_options(launcher, {"namespace": "team", "job_name": "fit",
                                           "job_dir": "gs://b/jobs/fit", "poll_seconds": 0.01})
    config = TrainConfig(dataset="gs://b/data", model_dir="gs://b/model")
    module.run(ClusterShape("default", chief=1), job.plan(config, launcher, options), options,
               api=object())


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_a_kubernetes_job_survives_transient_api_errors(launcher, kube_api):
    succeeded = LAUNCHERS[launcher][1]
    objects = kube_api(
        unavailable(), {"conditions": [condition("Created")]},
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104)),
        ApiException(status=429, reason="Too Many Requests"),
        {"conditions": [condition("Created"), condition("Running")]},
        *[unavailable() for _ in range(RETRIES)],
        {"conditions": [condition("Running"), condition(succeeded)]})
    launch(launcher)
    assert len(objects.created) == 1
    assert objects.reads == 6 + RETRIES
    assert not objects.deleted  # it succeeded: nothing to clean up


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_a_lasting_outage_gives_up_naming_the_job_and_deletes_it(launcher, kube_api):
    objects = kube_api({"conditions": [condition("Running")]},
                       *[unavailable() for _ in range(RETRIES)],
                       ApiException(status=504, reason="Gateway Timeout"))
    kind = "TFJob" if launcher == "tfjob" else "TrainJob"
    with pytest.raises(FollowGaveUp, match=(
            rf"^gave up following {kind} team/fit: {RETRIES + 1} attempts in a row to read "
            r"its status failed; the last error: ApiException: 504 Gateway Timeout$")):
        launch(launcher)
    assert objects.deleted == ["fit"]


@pytest.mark.parametrize("status,reason", [(403, "Forbidden"), (404, "Not Found")])
def test_a_refused_read_is_raised_at_once(status, reason, kube_api):
    objects = kube_api({"conditions": [condition("Running")]},
                       ApiException(status=status, reason=reason),
                       {"conditions": [condition("Succeeded")]})
    with pytest.raises(ApiException) as refused:
        launch("tfjob")
    assert refused.value.status == status
    assert objects.reads == 2  # no retry
    assert objects.deleted == ["fit"]


def test_a_job_failure_is_still_reported_after_hiccups(kube_api):
    kube_api(unavailable(), {"conditions": [
        {"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "exit 1"}]})
    with pytest.raises(tfjob.TFJOB.reported, match="TFJob team/fit failed: TFJobFailed: exit 1"):
        launch("tfjob")


class FlakyJobService:
    """Vertex AI's JobServiceClient: each get answers the next item of the script (raised if
    it is an exception, else the job's state)."""

    def __init__(self, script):
        from google.cloud import aiplatform_v1 as v1

        self.v1, self.script, self.cancelled = v1, list(script), []

    def create_custom_job(self, request):
        return self.v1.CustomJob(name="projects/p/locations/us-central1/customJobs/7")

    def get_custom_job(self, name):
        item = "JOB_STATE_CANCELLED" if self.cancelled else self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return self.v1.CustomJob(name=name, state=item)

    def cancel_custom_job(self, name):
        self.cancelled.append(name)


def run_vertex(service):
    options = job.parse_options("vertex", {"project": "p", "poll_seconds": 0.01})
    config = TrainConfig(dataset="gs://b/data", model_dir="gs://b/model")
    vertex.run(ClusterShape("default", chief=1), job.plan(config, "vertex", options), options,
               client=service)


def test_a_vertex_custom_job_survives_transient_api_errors():
    service = FlakyJobService([
        google.ServiceUnavailable("down"), "JOB_STATE_PENDING", google.DeadlineExceeded("late"),
        google.InternalServerError("oops"), "JOB_STATE_RUNNING",
        google.TooManyRequests("quota"), "JOB_STATE_SUCCEEDED"])
    run_vertex(service)
    assert not service.cancelled and not service.script


def test_a_vertex_outage_gives_up_naming_the_job_and_cancels_it():
    service = FlakyJobService(["JOB_STATE_RUNNING",
                               *[google.ServiceUnavailable("down") for _ in range(RETRIES + 1)]])
    with pytest.raises(FollowGaveUp, match=(
            r"gave up following Vertex AI CustomJob projects/p/locations/us-central1/"
            rf"customJobs/7: {RETRIES + 1} attempts .* ServiceUnavailable: 503 down")):
        run_vertex(service)
    assert service.cancelled == ["projects/p/locations/us-central1/customJobs/7"]


def test_a_vertex_refusal_is_raised_at_once_and_a_failure_still_named():
    service = FlakyJobService(["JOB_STATE_RUNNING", google.PermissionDenied("no")])
    with pytest.raises(google.PermissionDenied):
        run_vertex(service)
    assert service.cancelled
    with pytest.raises(VertexJobFailed, match="ended JOB_STATE_FAILED"):
        run_vertex(FlakyJobService([google.ServiceUnavailable("down"), "JOB_STATE_FAILED"]))
