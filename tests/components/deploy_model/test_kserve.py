"""The kserve target against a real kube-apiserver with the InferenceService resource
registered. No KServe controller runs here, so each test plays its part: it reads the
service deploy_model wrote and writes its status (Ready, a failure with its reason, or
nothing until the deadline)."""

import os

import pytest
from kube_controller import Controller, cluster

from tfkfp.components.deploy_model import kserve
from tfkfp.components.deploy_model.core import deploy_model, serving_model_uri
from tfkfp.components.deploy_model.errors import DeployFailed

HERE = os.path.dirname(__file__)
NAMESPACE = "team"


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory):
    with cluster(tmp_path_factory.mktemp("apiserver"), NAMESPACE,
                 [os.path.join(HERE, "inferenceservice-crd.yaml")]) as path:
        yield path


class KServe(Controller):
    """The KServe controller's part: write the service's status for its generation."""

    def __init__(self, kubeconfig):
        super().__init__(kubeconfig, NAMESPACE, kserve.GROUP, kserve.VERSION, kserve.PLURAL)

    def wait_for_generation(self, name, generation, timeout=60):
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            service = self.wait_for(name)
            if service["metadata"]["generation"] >= generation:
                return service
            time.sleep(0.1)
        raise AssertionError(f"{name} never reached generation {generation}")

    def ready(self, service, status="True", reason="", message="", **more):
        name = service["metadata"]["name"]
        condition = {"type": "Ready", "status": status}
        if reason:
            condition["reason"] = reason
        if message:  # the client sends an empty string as null, which the schema rejects
            condition["message"] = message
        self.replace_status(name, {
            "observedGeneration": service["metadata"]["generation"],
            "url": f"http://{name}.{NAMESPACE}.example.com",
            "address": {"url": f"http://{name}.{NAMESPACE}.svc.cluster.local"},
            "conditions": [condition], **more})


def options(**more):
    return {"namespace": NAMESPACE, "poll_seconds": 0.2, **more}


def test_a_new_service_is_created_and_its_url_returned_once_ready(kubeconfig, demo_model):
    controller = KServe(kubeconfig)
    check = controller.play("digits", controller.ready)
    done = deploy_model(demo_model, "kserve", "digits", options(cpu="1", memory="2Gi"))
    check()
    assert done.endpoint_url == "http://digits.team.svc.cluster.local"
    assert done.description["external_url"] == "http://digits.team.example.com"
    service = controller.job("digits")
    (container,) = service["spec"]["predictor"]["containers"]
    assert {"name": "STORAGE_URI", "value": demo_model} in container["env"]
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert serving_model_uri("kserve", "digits", options()) == demo_model


def test_an_update_waits_for_its_own_generation_and_takes_a_canary_share(kubeconfig,
                                                                          demo_model, tmp_path):
    controller = KServe(kubeconfig)
    check = controller.play("canary", controller.ready)
    deploy_model(demo_model, "kserve", "canary", options())
    check()
    old_status = controller.job("canary")["status"]  # Ready for generation 1

    def ready_later(_):
        service = controller.wait_for_generation("canary", 2)
        assert controller.job("canary")["status"] == old_status  # still the old Ready
        controller.ready(service)

    newer = str(tmp_path / "newer")
    os.symlink(demo_model, newer)
    check = controller.play("canary", ready_later)
    done = deploy_model(newer, "kserve", "canary", options(traffic_percent=10))
    check()
    service = controller.job("canary")
    assert service["spec"]["predictor"]["canaryTrafficPercent"] == 10
    assert service["status"]["observedGeneration"] == 2
    assert done.description["canary"] is True
    assert serving_model_uri("kserve", "canary", options()) == newer


def test_a_failure_the_service_reports_fails_the_step_with_its_reason(kubeconfig, demo_model):
    controller = KServe(kubeconfig)

    def fail(service):
        controller.ready(service, "False", "RevisionFailed", modelStatus={
            "transitionStatus": "BlockedByFailedLoad",
            "lastFailureInfo": {"reason": "ModelLoadFailed",
                                "message": "saved_model.pb: op Foo is not registered"}})

    check = controller.play("broken", fail)
    with pytest.raises(DeployFailed, match=r"BlockedByFailedLoad: ModelLoadFailed saved_model"
                                           r".pb: op Foo.*kept for `kubectl describe"):
        deploy_model(demo_model, "kserve", "broken", options())
    check()
    assert controller.exists("broken")  # created here: kept to be inspected


def test_a_failed_update_puts_the_previous_spec_back(kubeconfig, demo_model, tmp_path):
    controller = KServe(kubeconfig)
    check = controller.play("rollback", controller.ready)
    deploy_model(demo_model, "kserve", "rollback", options())
    check()
    before = controller.job("rollback")["spec"]

    def fail_update(_):
        service = controller.wait_for_generation("rollback", 2)
        controller.ready(service, "False", "RevisionFailed", message="CrashLoopBackOff")

    other = str(tmp_path / "other")
    os.symlink(demo_model, other)
    check = controller.play("rollback", fail_update)
    with pytest.raises(DeployFailed, match="Ready RevisionFailed: CrashLoopBackOff"):
        deploy_model(other, "kserve", "rollback", options(memory="3Gi"))
    check()
    assert controller.job("rollback")["spec"] == before
    assert serving_model_uri("kserve", "rollback", options()) == demo_model


def test_a_service_not_ready_by_the_deadline_is_deleted(kubeconfig, demo_model):
    controller = KServe(kubeconfig)

    def pending(service):
        controller.ready(service, "False", "PredictorNotReady")

    check = controller.play("slow", pending)
    with pytest.raises(DeployFailed, match=r"not Ready within 3 s.*Ready PredictorNotReady"):
        deploy_model(demo_model, "kserve", "slow", options(deadline_seconds=3))
    check()
    assert not controller.exists("slow")


def test_a_refused_service_names_the_api_servers_reason(kubeconfig, demo_model):
    with pytest.raises(DeployFailed, match=r"could not create InferenceService nowhere/x: 404"):
        deploy_model(demo_model, "kserve", "x", {"namespace": "nowhere", "poll_seconds": 0.2})


def test_cancelling_the_step_deletes_the_service_it_created(kubeconfig, demo_model, tmp_path):
    """The deploy_model step of the compiled serving pipeline, SIGTERMed (as kubelet does to
    a cancelled step's pod) while it waits for the service to become Ready."""
    import compiled_step

    from tfkfp.pipelines import registry

    controller = KServe(kubeconfig)
    spec = compiled_step.load(registry.golden_path("serving"))
    executor = compiled_step.executor_input(
        spec, "comp-deploy-model", tmp_path / "out",
        {"target": "kserve", "service_name": "cancelled", "deploy_options": options()},
        {"model": demo_model})
    step = compiled_step.start(spec, "comp-deploy-model", executor,
                               env={"KUBECONFIG": kubeconfig})
    try:
        controller.wait_for("cancelled")
    except BaseException:
        compiled_step.kill_group(step)
        raise
    out = compiled_step.terminate(step)
    assert step.returncode != 0, out[-3000:]
    assert "deleted InferenceService team/cancelled" in out, out[-3000:]
    assert not controller.exists("cancelled")
