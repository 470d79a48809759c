"""deploy_model follows its InferenceService through common/platform/follow.py: transient API
errors while it becomes Ready are retried, a lasting outage gives up naming the service and
the last error (and deletes the service it created, and its NetworkPolicy), and a refused
read is raised at once.
The API is a fake that answers from a script."""

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from scripted_kube import ScriptedObjects, unavailable

from tfkfp.components.common.platform.follow import RETRIES, FollowGaveUp
from tfkfp.components.deploy_model import kserve
from tfkfp.components.deploy_model.errors import DeployReportedFailure
from tfkfp.components.deploy_model.options import parse_options

NAMESPACE, NAME = "team", "digits"


def status(ready="True", **more):
    return {"observedGeneration": 1, "url": "http://digits.team.example.com",
            "address": {"url": "http://digits.team.svc.cluster.local"},
            "conditions": [{"type": "Ready", "status": ready}], **more}


class FakeNetworking:
    """NetworkingV1Api as network_policy.py calls it: no policy at first."""

    def __init__(self):
        self.policy, self.deleted = None, []

    def read_namespaced_network_policy(self, name, namespace):
        if self.policy is None:
            raise ApiException(status=404, reason="Not Found")
        return self.policy

    def create_namespaced_network_policy(self, namespace, body):
        self.policy = body

    def delete_namespaced_network_policy(self, name, namespace):
        self.policy = None
        self.deleted.append(name)


@pytest.fixture
def objects(monkeypatch):
    from kubernetes import client

    made = {}

    def install(*script):
        made["objects"] = ScriptedObjects(script)
        made["objects"].networking = FakeNetworking()
        monkeypatch.setattr(client, "CustomObjectsApi", lambda api: made["objects"])
        monkeypatch.setattr(client, "NetworkingV1Api", lambda api: made["objects"].networking)
        return made["objects"]

    return install


def deploy():
    options = parse_options("kserve", {"namespace": NAMESPACE, "poll_seconds": 0.01})
    body = kserve.manifest(NAME, NAMESPACE, "gs://b/model", "gs://b/model", options)
    return kserve.deploy(body, options, api=object())


def test_an_inference_service_survives_transient_api_errors(objects):
    fake = objects(unavailable(), status("False"),
                   urllib3.exceptions.ProtocolError("Connection aborted.",
                                                    ConnectionResetError(104)),
                   status("False"),
                   *[ApiException(status=500, reason="Internal Server Error")
                     for _ in range(RETRIES)],
                   status())
    service = deploy()
    assert kserve.endpoint_urls(service) == ("http://digits.team.svc.cluster.local",
                                            "http://digits.team.example.com")
    assert fake.reads == 5 + RETRIES and not fake.deleted
    assert fake.networking.policy is not None and not fake.networking.deleted


def test_a_lasting_outage_gives_up_naming_the_service_and_deletes_it(objects):
    fake = objects(status("False"), *[unavailable() for _ in range(RETRIES)],
                   ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(FollowGaveUp, match=(
            rf"^gave up following InferenceService team/digits: {RETRIES + 1} attempts in a "
            r"row to read its status failed; the last error: ConnectionRefusedError: "
            r"\[Errno 111\] Connection refused$")):
        deploy()
    assert fake.deleted == [NAME]
    assert fake.networking.deleted == [f"{NAME}-tfkfp-ingress"]


def test_a_refused_read_is_raised_at_once(objects):
    fake = objects(status("False"), ApiException(status=403, reason="Forbidden"), status())
    with pytest.raises(ApiException, match="Forbidden"):
        deploy()
    assert fake.reads == 2 and fake.deleted == [NAME]


def test_a_failure_the_service_reports_is_still_named_after_hiccups(objects):
    objects(unavailable(), status("False", modelStatus={
        "transitionStatus": "BlockedByFailedLoad",
        "lastFailureInfo": {"reason": "ModelLoadFailed", "message": "no saved_model.pb"}}))
    with pytest.raises(DeployReportedFailure, match=(
            "InferenceService team/digits failed: BlockedByFailedLoad: ModelLoadFailed no "
            "saved_model.pb; kept for `kubectl describe")):
        deploy()
