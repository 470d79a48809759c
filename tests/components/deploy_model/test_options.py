"""deploy_model's checks, the InferenceService it renders, Vertex traffic splits and
publishing: no engine needed."""

import os
import re

import pytest

from tfkfp.components.deploy_model import kserve, publish, smoke, vertex
from tfkfp.components.deploy_model.core import check_request
from tfkfp.components.deploy_model.errors import DeployConfigError
from tfkfp.components.deploy_model.options import parse_options


@pytest.mark.parametrize("target, options, message", [
    ("knative", {}, "target 'knative' is not one of kserve, vertex, existing"),
    ("kserve", {"region": "x"}, "['region'] are not known to target 'kserve'"),
    ("kserve", {"traffic_percent": 10}, "traffic_percent 10 needs mode 'knative'"),
    ("kserve", {"mode": "raw", "traffic_percent": 10}, "needs mode 'knative'"),
    ("kserve", {"min_replicas": 0}, "min_replicas 0 (scale to zero) needs mode 'knative'"),
    ("kserve", {"mode": "raw", "scale_metric": "rps"}, "does not apply in mode 'standard'"),
    ("kserve", {"mode": "RawDeployment"},
     "mode 'RawDeployment' is not one of standard, knative (or KServe's older names raw, "
     "serverless)"),
    ("kserve", {"ingress_namespaces": "istio-system, Gateways"},
     "ingress_namespaces 'istio-system, Gateways': ['Gateways'] are not namespace names"),
    ("kserve", {"runtime": "tfserving", "serve_args": "--top-k 2"}, "TF Serving takes"),
    ("kserve", {"traffic_percent": 0}, "traffic_percent 0 is not in 1-100"),
    ("kserve", {"min_replicas": 4, "max_replicas": 2}, "min_replicas 4 and max_replicas 2"),
    ("kserve", {"cpu": 2}, "cpu must be str"),
    ("kserve", {"precomputed_uri": "gs://b/p"}, "go together"),
    ("existing", {}, "needs deploy_options url"),
    ("vertex", {"deadline_seconds": 0}, "deadline_seconds must be positive"),
])
def test_bad_options_are_refused_naming_the_option(target, options, message):
    with pytest.raises(DeployConfigError, match=message.replace("[", r"\[").replace(
            "]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        parse_options(target, options)


def test_a_service_name_must_be_a_short_dns_label():
    with pytest.raises(DeployConfigError, match="service name 'My_Model'"):
        check_request("kserve", "My_Model", {})
    assert check_request("kserve", "digits-v2", {"max_replicas": 5.0}).max_replicas == 5


@pytest.mark.parametrize("given, mode, annotation", [
    ({}, "standard", "RawDeployment"),
    ({"mode": "standard"}, "standard", "RawDeployment"),
    ({"mode": "raw"}, "standard", "RawDeployment"),
    ({"mode": "knative"}, "knative", "Serverless"),
    ({"mode": "serverless"}, "knative", "Serverless"),
])
def test_modes_take_kserve_0_16_names_and_the_old_ones_and_annotate_for_every_release(
        given, mode, annotation):
    """The annotation keeps the pre-0.16 values: 0.16+ parses them, 0.15 would read
    "Standard" as unknown and fall back to Knative."""
    options = parse_options("kserve", given)
    assert options.mode == mode
    body = kserve.manifest("digits", "team", "gs://b/model", "gs://b/m", options)
    assert body["metadata"]["annotations"][kserve.MODE_ANNOTATION] == annotation
    assert ("serving.kserve.io/autoscalerClass" in body["metadata"]["annotations"]) == (
        mode == "standard")


def test_scale_to_zero_and_canaries_are_knative_only():
    options = parse_options("kserve", {"mode": "knative", "min_replicas": 0,
                                       "traffic_percent": 30})
    predictor = kserve.manifest("d", "team", "gs://b/m", "gs://b/m", options)["spec"][
        "predictor"]
    assert (predictor["minReplicas"], predictor["canaryTrafficPercent"]) == (0, 30)
    assert parse_options("vertex", {"min_replicas": 0}).min_replicas == 0  # not KServe's rule


@pytest.mark.parametrize("given", [{"mode": "standard"}, {"mode": "knative"},
                                   {"mode": "standard", "runtime": "tfserving"},
                                   {"mode": "knative", "runtime": "tfserving"}])
def test_the_predictor_runs_without_token_root_capabilities_or_a_writable_root(given):
    options = parse_options("kserve", given)
    predictor = kserve.manifest("d", "team", "gs://b/m", "gs://b/m", options)["spec"][
        "predictor"]
    assert predictor["automountServiceAccountToken"] is False
    (container,) = predictor.get("containers") or [predictor["model"]]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert (security["runAsNonRoot"], security["runAsUser"]) == (True, 1000)
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    (mount,) = container["volumeMounts"]
    assert mount["mountPath"] == "/tmp"
    assert {"name": mount["name"], "emptyDir": {}} in predictor["volumes"]
    # Knative refuses a pod securityContext unless its admin enabled it: standard mode only.
    pod = predictor.get("securityContext")
    if options.mode == "standard":
        assert pod == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    else:
        assert pod is None


@pytest.mark.parametrize("given, callers", [
    ({}, ["istio-system"]),
    ({"mode": "knative"}, ["istio-system", "knative-serving"]),
    ({"mode": "knative", "ingress_namespaces": "kourier-system, knative-serving"},
     ["kourier-system", "knative-serving"]),
    ({"ingress_namespaces": "kserve,team"}, ["kserve"]),  # team: the service's own
    ({"ingress_namespaces": ""}, []),
])
def test_the_network_policy_admits_the_namespace_and_its_modes_callers_only(given, callers):
    from kubernetes import client

    from tfkfp.components.deploy_model import network_policy

    policy = client.ApiClient().sanitize_for_serialization(
        network_policy.render("digits", "team", parse_options("kserve", given)))
    assert policy["spec"]["podSelector"] == {
        "matchLabels": {"serving.kserve.io/inferenceservice": "digits"}}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"][0] == {"podSelector": {}}  # the service's own namespace
    assert [peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            for peer in rule["from"][1:]] == callers
    assert "ports" not in rule


def test_an_image_by_digest_passes_through_unchanged():
    image = "registry.example/tfkfp@sha256:" + "ab" * 32
    options = parse_options("kserve", {"image": image})
    (container,) = kserve.manifest("d", "team", "gs://b/m", "gs://b/m", options)["spec"][
        "predictor"]["containers"]
    assert container["image"] == image


def test_the_tfkfp_predictor_runs_tfkfp_serve_on_the_downloaded_model():
    options = parse_options("kserve", {"mode": "knative", "cpu": "1", "memory": "2Gi",
                                       "scale_metric": "rps",
                                       "scale_target": 50, "traffic_percent": 20,
                                       "precomputed_uri": "gs://b/pre",
                                       "precomputed_key": "user", "serve_args": "--top-k 3"})
    body = kserve.manifest("digits", "team", "gs://b/model", "gs://b/run/model", options)
    predictor = body["spec"]["predictor"]
    (container,) = predictor["containers"]
    assert container["command"] == ["tfkfp", "serve", "/mnt/models", "--name", "digits",
                                    "--host", "0.0.0.0", "--port", "8080", "--precomputed", "gs://b/pre",
                                    "--precomputed-key", "user", "--top-k", "3"]
    assert {"name": "STORAGE_URI", "value": "gs://b/model"} in container["env"]
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert (predictor["scaleMetric"], predictor["scaleTarget"]) == ("rps", 50)
    assert predictor["canaryTrafficPercent"] == 20
    assert predictor["serviceAccountName"] == "tfkfp-serving"
    annotations = body["metadata"]["annotations"]
    assert annotations[kserve.MODE_ANNOTATION] == "Serverless"
    assert annotations[kserve.MODEL_URI_ANNOTATION] == "gs://b/run/model"


def test_raw_deployment_autoscales_on_cpu_with_an_hpa_and_tf_serving_loads_the_model():
    options = parse_options("kserve", {"mode": "standard", "runtime": "tfserving",
                                       "scale_metric": "cpu", "scale_target": 70})
    body = kserve.manifest("digits", "team", "gs://b/models/digits", "gs://b/m", options)
    predictor = body["spec"]["predictor"]
    assert predictor["model"]["modelFormat"] == {"name": "tensorflow"}
    assert predictor["model"]["runtimeVersion"] == options.tfserving_version
    assert predictor["model"]["storageUri"] == "gs://b/models/digits"
    assert "containers" not in predictor and "canaryTrafficPercent" not in predictor
    assert body["metadata"]["annotations"][kserve.MODE_ANNOTATION] == "RawDeployment"
    assert body["metadata"]["annotations"]["serving.kserve.io/autoscalerClass"] == "hpa"
    assert (predictor["scaleMetric"], predictor["scaleTarget"]) == ("cpu", 70)


def test_tf_serving_gets_a_new_numbered_version_folder(demo_model, tmp_path):
    base = str(tmp_path / "models" / "digits")
    os.makedirs(os.path.join(base, "99999999999"))  # a later version already there
    storage = publish.kserve_storage_uri(demo_model, "gs://b/m", "savedmodel", "tfserving",
                                         base)
    assert storage == base
    assert os.path.exists(os.path.join(base, "100000000000", "saved_model.pb"))
    assert not [n for n in os.listdir(base) if not n.isdigit()]  # no temporary left


def test_tf_serving_refuses_a_tflite_bundle_and_needs_a_storage_folder(demo_model):
    with pytest.raises(DeployConfigError, match="serves SavedModels"):
        publish.kserve_storage_uri("b", "b", "tflite", "tfserving", "gs://b/m")
    with pytest.raises(DeployConfigError, match="needs deploy_options storage_uri"):
        publish.kserve_storage_uri(demo_model, demo_model, "savedmodel", "tfserving", "")
    assert publish.kserve_storage_uri(demo_model, "minio://mlpipeline/run/model",
                                      "savedmodel", "tfkfp", "") == "s3://mlpipeline/run/model"


def test_a_model_that_is_neither_kind_is_refused_naming_what_is_there(tmp_path):
    (tmp_path / "weights.h5").write_text("x")
    with pytest.raises(DeployConfigError, match=r"neither saved_model.pb .*weights.h5"):
        publish.model_kind(str(tmp_path))


@pytest.mark.parametrize("current, percent, expected", [
    ({}, 100, {"0": 100}),
    ({"7": 100}, 100, {"0": 100}),
    ({"7": 100}, 20, {"0": 20, "7": 80}),
    ({"7": 70, "8": 30}, 25, {"0": 25, "7": 53, "8": 22}),
])
def test_vertex_traffic_split_keeps_the_others_proportions_and_sums_to_100(
        current, percent, expected):
    split = vertex.traffic_split(current, percent)
    assert split == expected and sum(split.values()) == 100


def test_a_canary_on_an_empty_vertex_endpoint_is_refused():
    with pytest.raises(DeployConfigError, match="has none serving"):
        vertex.traffic_split({}, 30)


def test_predict_urls_follow_the_endpoint_kind():
    assert smoke.predict_url("http://digits.team.svc.cluster.local/", "digits") == \
        "http://digits.team.svc.cluster.local/v1/models/digits:predict"
    vertex_url = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/" \
                 "us-central1/endpoints/42"
    assert smoke.predict_url(vertex_url, "digits") == vertex_url + ":predict"


@pytest.mark.parametrize("pipeline, pairs, message", [
    ("training", ["deploy=knative"], "deploy 'knative' is not one of none, kserve"),
    ("training", ["deploy=kserve", 'deploy_options={"mode": "raw", "traffic_percent": 5}'],
     "needs mode 'knative'"),
    ("training", ["deploy=kserve", 'deploy_options={"min_replicas": 0}'],
     "min_replicas 0 (scale to zero) needs mode 'knative'"),
    ("training", ["deploy=kserve", "gate_metric=auc"], "gate metric 'auc'"),
    ("serving", ["target=existing"], "needs deploy_options url"),
    ("serving", ["precompute_dataset_uri=gs://b/d"], "needs precomputed_uri"),
    ("serving", ["service_name=Digits"], "service name 'Digits'"),
])
def test_the_pipelines_refuse_deploy_settings_before_a_run(pipeline, pairs, message):
    from tfkfp.pipelines.registry import ParameterError, parse_parameters

    required = {"training": ["input_uri=d.csv", "label=label"],
                "serving": ["model_uri=gs://b/m", "dataset_uri=gs://b/d"]}[pipeline]
    with pytest.raises(ParameterError, match=re.escape(message)):
        parse_parameters(pipeline, required + pairs)


class ConfigMaps:
    """CoreV1Api's ConfigMap read, answering one tfkfp-config (None: 404, none there)."""

    def __init__(self, data):
        self.data = data

    def __call__(self, api=None):
        return self

    def read_namespaced_config_map(self, name, namespace):
        from kubernetes import client

        if self.data is None:
            raise client.ApiException(status=404, reason="Not Found")
        return client.V1ConfigMap(data=self.data)


@pytest.mark.parametrize("data, allowed", [
    (None, "2.19.0"),  # no ConfigMap: the defaults
    ({"servingServiceAccounts": "tfkfp-serving\n"}, "2.19.0"),  # one written before the key
    ({"servingServiceAccounts": "tfkfp-serving\n",
      "servingRuntimeVersions": "2.18.1\n2.19.0\n"}, "2.18.1, 2.19.0")])
def test_tf_servings_version_is_only_one_the_admin_allowed(monkeypatch, data, allowed):
    """runtimeVersion picks the TF Serving image KServe runs: an allow-listed choice."""
    from kubernetes import client

    from tfkfp.components.deploy_model import least_privilege

    monkeypatch.setattr(client, "CoreV1Api", ConfigMaps(data))
    tfserving = {"runtime": "tfserving", "tfserving_version": "2.19.0"}
    least_privilege.check_allowed(parse_options("kserve", tfserving), "team", api=object())
    evil = parse_options("kserve", {**tfserving, "tfserving_version": "latest-evil"})
    with pytest.raises(DeployConfigError, match=re.escape(
            f"deploy_options tfserving_version 'latest-evil' is not allowed in namespace "
            f"'team'; allowed: {allowed} (ConfigMap tfkfp-config, key servingRuntimeVersions")):
        least_privilege.check_allowed(evil, "team", api=object())


def test_in_a_cluster_the_vertex_image_is_one_the_namespaces_allow_list_names(monkeypatch):
    from kubernetes import client

    from tfkfp.components._image import IMAGE
    from tfkfp.components.deploy_model import least_privilege

    mine = "registry.example/tfkfp@sha256:" + "1" * 64
    monkeypatch.delenv("TFKFP_IMAGE", raising=False)  # the default image: the suite's
    monkeypatch.setattr(client, "CoreV1Api", ConfigMaps({"servingImages": f"{mine}\n"}))
    monkeypatch.setattr(least_privilege.kube_api, "default_namespace", lambda: "ml")
    least_privilege.check_vertex_allowed(parse_options("vertex", {"image": mine}), object())
    with pytest.raises(DeployConfigError, match=re.escape(
            f"deploy_options image '{IMAGE}' is not allowed in namespace 'ml'; allowed: "
            f"{mine} (ConfigMap tfkfp-config, key servingImages")):
        least_privilege.check_vertex_allowed(parse_options("vertex", {}), object())
