"""The kserve target against a real kube-apiserver with the InferenceService resource
registered. No KServe controller runs here, so each test plays its part: it reads the
service deploy_model wrote and writes its status (Ready, a failure with its reason, or
nothing until the deadline). The API server prunes any field KServe's published schema does
not have, so what a test reads back is what KServe would get."""

import os
import pathlib

import pytest
import upstream_schemas
import yaml
from kube_controller import Controller, kubeconfig_fixture

from tfkfp.components._image import IMAGE
from tfkfp.components.deploy_model import kserve, least_privilege, network_policy
from tfkfp.components.deploy_model.core import deploy_model, serving_model_uri
from tfkfp.components.deploy_model.errors import DeployConfigError, DeployFailed
from tfkfp.components.deploy_model.options import parse_options

NAMESPACE = "team"
ROOT = pathlib.Path(__file__).resolve().parents[3]


kubeconfig = kubeconfig_fixture(NAMESPACE, [upstream_schemas.INFERENCESERVICE])


class KServe(Controller):
    """The KServe controller's part: write the service's status for its generation."""

    namespace, resource_module = NAMESPACE, kserve

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


def policy_of(kubeconfig, service, namespace=NAMESPACE):
    """The NetworkPolicy beside ``service`` as the API server holds it (a dict), or None."""
    from kubernetes import client, config

    api = config.new_client_from_config(kubeconfig)
    try:
        policy = client.NetworkingV1Api(api).read_namespaced_network_policy(
            network_policy.policy_name(service), namespace)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise
    return api.sanitize_for_serialization(policy)


def callers(policy):
    (rule,) = policy["spec"]["ingress"]
    return [peer.get("namespaceSelector", {}).get("matchLabels", {}).get(
        network_policy.NAMESPACE_NAME_LABEL, "own namespace") for peer in rule["from"]]


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
    policy = policy_of(kubeconfig, "digits")
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "serving.kserve.io/inferenceservice": "digits"}
    assert callers(policy) == ["own namespace", "istio-system"]  # standard mode


@pytest.mark.parametrize("mode", ["standard", "knative"])
def test_the_predictor_kserve_receives_is_hardened(kubeconfig, demo_model, mode):
    """Read back through KServe's schema, which drops a field it does not have: no token,
    non-root, no capabilities, seccomp, a read-only root with an emptyDir at /tmp."""
    controller = KServe(kubeconfig)
    name = f"hardened-{mode}"
    check = controller.play(name, controller.ready)
    deploy_model(demo_model, "kserve", name, options(mode=mode))
    check()
    predictor = controller.job(name)["spec"]["predictor"]
    assert predictor["automountServiceAccountToken"] is False
    (container,) = predictor["containers"]
    assert container["securityContext"] == least_privilege.CONTAINER_SECURITY
    (mount,) = container["volumeMounts"]
    assert mount == {"name": "tfkfp-tmp", "mountPath": "/tmp"}
    assert predictor["volumes"] == [{"name": "tfkfp-tmp", "emptyDir": {}}]
    assert predictor.get("securityContext") == (
        least_privilege.POD_SECURITY if mode == "standard" else None)


def test_an_update_waits_for_its_own_generation_and_takes_a_canary_share(kubeconfig,
                                                                          demo_model, tmp_path):
    controller = KServe(kubeconfig)
    check = controller.play("canary", controller.ready)
    deploy_model(demo_model, "kserve", "canary", options(mode="serverless"))
    check()
    old_status = controller.job("canary")["status"]  # Ready for generation 1

    def ready_later(_):
        service = controller.wait_for_generation("canary", 2)
        assert controller.job("canary")["status"] == old_status  # still the old Ready
        controller.ready(service)

    newer = str(tmp_path / "newer")
    os.symlink(demo_model, newer)
    check = controller.play("canary", ready_later)
    done = deploy_model(newer, "kserve", "canary", options(mode="knative", traffic_percent=10))
    check()
    service = controller.job("canary")
    assert service["spec"]["predictor"]["canaryTrafficPercent"] == 10
    assert service["metadata"]["annotations"][kserve.MODE_ANNOTATION] == "Serverless"
    assert callers(policy_of(kubeconfig, "canary")) == ["own namespace", "istio-system",
                                                        "knative-serving"]
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
    assert policy_of(kubeconfig, "broken") is not None  # and still guarded


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
        deploy_model(other, "kserve", "rollback", options(memory="3Gi",
                                                          ingress_namespaces="kserve"))
    check()
    assert controller.job("rollback")["spec"] == before
    assert callers(policy_of(kubeconfig, "rollback")) == ["own namespace", "istio-system"]
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
    assert policy_of(kubeconfig, "slow") is None


def test_a_refused_service_names_the_api_servers_reason(kubeconfig, demo_model):
    with pytest.raises(DeployFailed, match=r"could not create NetworkPolicy "
                                           r"nowhere/x-tfkfp-ingress: 404 Not Found"):
        deploy_model(demo_model, "kserve", "x", {"namespace": "nowhere", "poll_seconds": 0.2})


def test_a_refused_service_leaves_no_network_policy(kubeconfig, demo_model):
    """The policy is written first (no pod starts unguarded) and removed when the service
    cannot be created: here KServe's schema refuses a scale target of the wrong type."""
    controller = KServe(kubeconfig)
    body = kserve.manifest("refused", NAMESPACE, demo_model, demo_model,
                           parse_options("kserve", options()))
    body["spec"]["predictor"]["minReplicas"] = "one"
    with pytest.raises(DeployFailed, match=r"could not create InferenceService team/refused: "
                                           r"422"):
        kserve.deploy(body, parse_options("kserve", options()))
    assert not controller.exists("refused")
    assert policy_of(kubeconfig, "refused") is None


@pytest.mark.parametrize("field, value, runtime", [
    ("image", "evil/miner:1", "tfkfp"), ("service_account", "tfkfp-runner", "tfkfp"),
    ("tfserving_version", "latest-evil", "tfserving")])
def test_without_an_allow_list_only_the_default_image_version_and_account_run(
        kubeconfig, demo_model, tmp_path, field, value, runtime):
    """Refused before anything is published (storage_uri stays empty) or created."""
    controller = KServe(kubeconfig)
    published = tmp_path / "published"
    with pytest.raises(DeployConfigError, match=(
            rf"deploy_options {field} '{value}' is not allowed in namespace 'team'; allowed: "
            rf"({IMAGE}|tfkfp-serving|2\.19\.0) \(ConfigMap tfkfp-config, key serving")):
        deploy_model(demo_model, "kserve", "refused", options(
            storage_uri=str(published), runtime=runtime, **{field: value}))
    assert not published.exists()
    assert not controller.exists("refused")
    assert policy_of(kubeconfig, "refused") is None


def test_the_shipped_allow_list_admits_the_default_predictor_and_exact_entries_only(
        kubeconfig):
    """manifests/base's ConfigMap, plus an image by digest: entries match exactly, so the
    digest passes and a tag of the same repository does not."""
    from kubernetes import client, config

    config_map = yaml.safe_load((ROOT / "manifests" / "base" / "tfkfp-config.yaml").read_text())
    digest = "registry.example/tfkfp@sha256:" + "0" * 64
    config_map["data"]["servingImages"] += digest + "\n"
    api = config.new_client_from_config(kubeconfig)
    client.CoreV1Api(api).create_namespace({"metadata": {"name": "listed"}})
    client.CoreV1Api(api).create_namespaced_config_map("listed", config_map)
    least_privilege.check_allowed(parse_options("kserve", {}), "listed", api)
    least_privilege.check_allowed(parse_options("kserve", {"image": digest}), "listed", api)
    with pytest.raises(DeployConfigError, match=(
            r"deploy_options image 'registry.example/tfkfp:0.1.0' is not allowed in namespace "
            rf"'listed'; allowed: {IMAGE}, {digest} \(ConfigMap tfkfp-config, key "
            r"servingImages")):
        least_privilege.check_allowed(
            parse_options("kserve", {"image": "registry.example/tfkfp:0.1.0"}), "listed", api)
    with pytest.raises(DeployConfigError, match=r"service_account 'default' .* key "
                                                r"servingServiceAccounts"):
        least_privilege.check_allowed(parse_options("kserve", {"service_account": "default"}),
                                      "listed", api)


def test_the_runtime_version_and_the_vertex_image_follow_the_namespaces_allow_list(
        kubeconfig, monkeypatch):
    """TF Serving's version picks the code a tfserving predictor runs, as the image does for
    tfkfp's runtime and for vertex: each only as the admin listed it."""
    from kubernetes import client, config

    api = config.new_client_from_config(kubeconfig)
    mine = "registry.example/tfkfp@sha256:" + "1" * 64
    client.CoreV1Api(api).create_namespace({"metadata": {"name": "versions"}})
    client.CoreV1Api(api).create_namespaced_config_map("versions", {
        "metadata": {"name": "tfkfp-config"},
        "data": {"servingImages": mine + "\n", "servingServiceAccounts": "tfkfp-serving\n",
                 "servingRuntimeVersions": "2.18.1\n"}})
    tfserving = {"runtime": "tfserving"}
    least_privilege.check_allowed(parse_options("kserve", {**tfserving,
                                                           "tfserving_version": "2.18.1"}),
                                  "versions", api)
    with pytest.raises(DeployConfigError, match=(
            r"deploy_options tfserving_version '2.19.0' is not allowed in namespace "
            r"'versions'; allowed: 2.18.1 \(ConfigMap tfkfp-config, key "
            r"servingRuntimeVersions")):
        least_privilege.check_allowed(parse_options("kserve", tfserving), "versions", api)
    monkeypatch.setattr(least_privilege.kube_api, "default_namespace", lambda: "versions")
    least_privilege.check_vertex_allowed(parse_options("vertex", {"image": mine}), api)
    with pytest.raises(DeployConfigError, match=(
            rf"deploy_options image '{IMAGE}' is not allowed in namespace 'versions'; "
            r"allowed: registry.example/tfkfp@sha256:1{64} \(ConfigMap tfkfp-config, key "
            r"servingImages")):
        least_privilege.check_vertex_allowed(parse_options("vertex", {}), api)


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
    assert policy_of(kubeconfig, "cancelled") is None
