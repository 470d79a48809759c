"""Every object tfkfp writes to an API, checked against that API's published schema.

Kubernetes: the TrainJob and the ClusterTrainingRuntime it references (Kubeflow Trainer v2),
the TFJob (Training Operator) and the InferenceService (KServe), rendered by the project's own
functions with options that take every branch, are created in a real API server with the
upstream CRDs (tests/upstream_schemas.py) and read back. The API server refuses a wrong type
or value and silently prunes a field the resource does not have, so what was sent must all be
there in what it stored.

Vertex AI: the requests are google-cloud-aiplatform's typed messages; each must hold every
option it was given, in a field and value the API knows, and survive the API's JSON form."""

import gzip
import re

import pytest
import upstream_schemas
import yaml
from cluster_tools import ROOT, run, tool
from fake_vertex.long_running import Done
from kube_controller import cluster_with

from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.deploy_model import kserve
from tfkfp.components.deploy_model import options as deploy_options
from tfkfp.components.deploy_model import vertex as deploy_vertex
from tfkfp.components.deploy_model.errors import DeployConfigError
from tfkfp.components.train.launchers import job, tfjob, trainjob
from tfkfp.components.train.launchers import vertex as train_vertex

NAMESPACE = "team"
PARAMETER_SERVER = ClusterShape("parameter_server", chief=1, workers=3, ps=2)
MULTI_WORKER = ClusterShape("multi_worker_mirrored", workers=3)
SINGLE = ClusterShape("default", chief=1)
EVERY_POD_OPTION = {"gpus": 2, "cpu": "4", "memory": "16Gi", "service_account": "trainer-sa",
                    "volume_claim": "shared-data", "mount_path": "/mnt/data",
                    "deadline_seconds": 600, "image": "registry.example/tfkfp:1"}


def lost(sent, stored, path="") -> list:
    """Where ``stored`` lacks or changed what ``sent`` holds (defaults it added are fine)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path}: sent an object, stored {stored!r}"]
        return [problem for key, value in sent.items()
                for problem in ([f"{path}.{key}: pruned"] if key not in stored
                                else lost(value, stored[key], f"{path}.{key}"))]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: sent {sent!r}, stored {stored!r}"]
        return [problem for index, (a, b) in enumerate(zip(sent, stored))
                for problem in lost(a, b, f"{path}[{index}]")]
    return [] if sent == stored else [f"{path}: sent {sent!r}, stored {stored!r}"]


def test_lost_names_pruned_and_changed_fields_and_ignores_defaults():
    sent = {"spec": {"a": 1, "b": [{"c": "x"}], "d": {"e": True}}}
    stored = {"spec": {"a": 1, "b": [{"c": "y", "default": 0}], "added": 3}}
    assert lost(sent, stored) == [".spec.b[0].c: sent 'x', stored 'y'", ".spec.d: pruned"]
    assert lost(sent, {**stored, "spec": {**sent["spec"], "added": 3}}) == []


def fields(schema, path="") -> set:
    """Every field path a schema names."""
    found = set()
    for key, value in schema.items():
        if key == "properties":
            for name, child in value.items():
                found |= {f"{path}.{name}"} | fields(child, f"{path}.{name}")
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            found |= fields(value, f"{path}[]")
    return found


@pytest.mark.parametrize("name", [upstream_schemas.INFERENCESERVICE, upstream_schemas.TFJOB,
                                  *upstream_schemas.TRAINER])
def test_each_upstream_crd_names_its_release_and_keeps_every_field_for_1_20(name):
    with gzip.open(upstream_schemas.FOLDER / f"{name}.yaml.gz", "rt") as f:
        header = f.read(2000)
    assert re.search(r"https://github\.com/[\w-]+/[\w-]+, tag v\d+\.\d+\.\d+ \(commit "
                     r"[0-9a-f]{40}\),\n# file \S+\.yaml\.", header), header
    upstream = upstream_schemas.definition(name)
    ready = upstream_schemas.for_kubernetes_1_20(upstream)
    assert ready["metadata"]["name"] == name
    for version, kept in zip(upstream["spec"]["versions"], ready["spec"]["versions"]):
        schema = version["schema"]["openAPIV3Schema"]
        assert fields(kept["schema"]["openAPIV3Schema"]) == fields(schema)
    text = str(ready)
    assert upstream_schemas.CEL_RULES not in text and "'default': ''" not in text


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """The API server's custom objects, with every upstream CRD tfkfp writes to."""
    from kubernetes import client, config

    schemas = [upstream_schemas.INFERENCESERVICE, upstream_schemas.TFJOB,
               *upstream_schemas.TRAINER]
    with cluster_with(tmp_path_factory, NAMESPACE, schemas) as kubeconfig:
        yield client.CustomObjectsApi(config.new_client_from_config(kubeconfig))


def create_and_read_back(objects, body, plural):
    group, version = body["apiVersion"].split("/")
    if "namespace" in body["metadata"]:
        objects.create_namespaced_custom_object(group, version, NAMESPACE, plural, body)
        return objects.get_namespaced_custom_object(group, version, NAMESPACE, plural,
                                                    body["metadata"]["name"])
    objects.create_cluster_custom_object(group, version, plural, body)
    return objects.get_cluster_custom_object(group, version, plural, body["metadata"]["name"])


def assert_stored_as_sent(objects, body, plural):
    stored = create_and_read_back(objects, body, plural)
    sent = {"spec": body["spec"], "labels": body["metadata"].get("labels", {}),
            "annotations": body["metadata"].get("annotations", {})}
    kept = {"spec": stored["spec"], "labels": stored["metadata"].get("labels", {}),
            "annotations": stored["metadata"].get("annotations", {})}
    assert lost(sent, kept) == [], f"{body['kind']} {body['metadata']['name']}"


def train_plan(strategy, launcher, options):
    config = TrainConfig(dataset="gs://b/data", model_dir="gs://b/run/train/model",
                         strategy=strategy)
    return job.plan(config, launcher, options)


def test_the_suites_clustertrainingruntime_is_stored_as_written(objects):
    rendered = run([tool("kubectl"), "kustomize", ROOT / "manifests" / "trainer"]).stdout
    (runtime,) = [d for d in yaml.safe_load_all(rendered) if d]
    assert_stored_as_sent(objects, runtime, "clustertrainingruntimes")
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    assert pod["automountServiceAccountToken"] is False  # the TrainJob cannot patch it


@pytest.mark.parametrize("shape,launch", [
    (SINGLE, {}),  # the runtime's account and no shared volume: no runtime patch
    (PARAMETER_SERVER, EVERY_POD_OPTION),
    (MULTI_WORKER, {"service_account": "trainer-sa"}),
], ids=["defaults", "ps-gpus-account-volume", "mwms-account"])
def test_each_trainjob_is_stored_as_written(objects, shape, launch):
    options = job.parse_options("trainjob", {**launch, "runtime": "tfkfp-tensorflow"})
    name = f"trainjob-{shape.strategy.replace('_', '-')}-{len(launch)}"
    body = trainjob.manifest(shape, train_plan(shape.strategy, "trainjob", options), options,
                             name, NAMESPACE)
    assert_stored_as_sent(objects, body, trainjob.PLURAL)


@pytest.mark.parametrize("shape,launch", [
    (SINGLE, {}),
    (PARAMETER_SERVER, {**EVERY_POD_OPTION, "backoff_limit": 5}),
    (MULTI_WORKER, {"gpus": 1}),
], ids=["defaults", "ps-gpus-account-volume", "mwms-gpus"])
def test_each_tfjob_is_stored_as_written(objects, shape, launch):
    options = job.parse_options("tfjob", launch)
    name = f"tfjob-{shape.strategy.replace('_', '-')}-{len(launch)}"
    body = tfjob.manifest(shape, train_plan(shape.strategy, "tfjob", options), options, name,
                          NAMESPACE)
    assert_stored_as_sent(objects, body, tfjob.PLURAL)


def service_options(runtime, mode, metric):
    """Options taking every branch the runtime and mode allow: scaling, replicas, account,
    resources, a canary share and scale to zero where the mode has them, precomputed
    answers and serve flags for tfkfp serve."""
    chosen = {"runtime": runtime, "mode": mode, "scale_metric": metric, "scale_target": 7,
              "min_replicas": 2, "max_replicas": 4, "cpu": "1500m", "memory": "3Gi",
              "service_account": "serving-sa", "namespace": NAMESPACE}
    if runtime == "tfkfp":
        chosen.update(precomputed_uri="gs://b/predictions", precomputed_key="id",
                      serve_args="--batch-size 64", image="registry.example/tfkfp:1")
    else:
        chosen.update(tfserving_version="2.19.0")
    for only_some_modes in ({"traffic_percent": 20}, {"min_replicas": 0}):
        try:
            deploy_options.parse_options("kserve", {**chosen, **only_some_modes})
            chosen.update(only_some_modes)
        except DeployConfigError:  # not in this mode
            pass
    return deploy_options.parse_options("kserve", chosen)


@pytest.mark.parametrize("runtime,mode,metric", [
    (runtime, mode, metric) for runtime in deploy_options.RUNTIMES
    for mode in deploy_options.MODES for metric in deploy_options.SCALE_METRICS[mode]])
def test_each_inferenceservice_is_stored_as_written(objects, runtime, mode, metric):
    options = service_options(runtime, mode, metric)
    name = f"{runtime}-{mode}-{metric}".lower()
    body = kserve.manifest(name, NAMESPACE, "gs://b/published/model", "gs://b/run/model",
                           options)
    assert_stored_as_sent(objects, body, kserve.PLURAL)


@pytest.mark.parametrize("kind", ["TrainJob", "TFJob", "InferenceService"])
def test_a_misspelled_field_is_pruned_and_named(objects, kind):
    """The upstream schemas are closed where tfkfp writes: a field the resource does not
    have is lost on the way in, and the comparison says which."""
    if kind == "TrainJob":
        options = job.parse_options("trainjob", {})
        body = trainjob.manifest(SINGLE, train_plan("default", "trainjob", options), options,
                                 "misspelled", NAMESPACE)
        body["spec"]["trainer"]["resourcePerNode"] = {"limits": {"cpu": "1"}}
        where, plural = ".spec.trainer.resourcePerNode", trainjob.PLURAL
    elif kind == "TFJob":
        options = job.parse_options("tfjob", {})
        body = tfjob.manifest(SINGLE, train_plan("default", "tfjob", options), options,
                              "misspelled", NAMESPACE)
        (container,) = body["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"]
        container["resource"] = {"limits": {"cpu": "1"}}
        where = ".spec.tfReplicaSpecs.Chief.template.spec.containers[0].resource"
        plural = tfjob.PLURAL
    else:
        body = kserve.manifest("misspelled", NAMESPACE, "gs://b/m", "gs://b/m",
                               deploy_options.parse_options("kserve", {}))
        body["spec"]["predictor"]["minReplica"] = 2
        where, plural = ".spec.predictor.minReplica", kserve.PLURAL
    stored = create_and_read_back(objects, body, plural)
    assert lost({"spec": body["spec"]}, {"spec": stored["spec"]}) == [f"{where}: pruned"]


def typed_round_trip(message):
    """The message through the API's JSON form, parsed back refusing unknown fields."""
    from google.protobuf import json_format

    raw = type(message).pb(message)
    parsed = json_format.ParseDict(json_format.MessageToDict(raw), type(raw)())
    assert parsed == raw
    return json_format.MessageToDict(raw, preserving_proto_field_name=True)


def test_the_custom_job_request_holds_every_option_in_the_typed_api():
    options = job.parse_options("vertex", {
        "project": "p", "region": "europe-west4", "machine_type": "a2-highgpu-2g",
        "gpu_type": "NVIDIA_TESLA_A100", "gpus": 2, "image": "europe-docker.pkg.dev/p/r/t:1",
        "deadline_seconds": 7200, "service_account": "trainer@p.iam.gserviceaccount.com"})
    plan = train_plan("parameter_server", "vertex", options)
    request = train_vertex.request(PARAMETER_SERVER, plan, options, "p", "run-1")
    body = typed_round_trip(request)
    spec = body["custom_job"]["job_spec"]
    assert [pool["machine_spec"] for pool in spec["worker_pool_specs"]] == [
        {"machine_type": "a2-highgpu-2g", "accelerator_type": "NVIDIA_TESLA_A100",
         "accelerator_count": 2}] * 2 + [{"machine_type": "a2-highgpu-2g"}]
    assert spec["scheduling"] == {"timeout": "7200s"}
    assert spec["service_account"] == options.service_account
    assert spec["base_output_directory"] == {"output_uri_prefix": plan.job_dir}
    assert body["custom_job"]["labels"] == {"app": "tfkfp", "component": "train"}


def test_the_model_upload_and_endpoint_requests_hold_every_option_in_the_typed_api():
    options = deploy_options.parse_options("vertex", {
        "project": "p", "region": "europe-west4", "image": "europe-docker.pkg.dev/p/r/t:1",
        "precomputed_uri": "gs://b/predictions", "precomputed_key": "id",
        "serve_args": "--batch-size 64", "machine_type": "n1-highcpu-8",
        "min_replicas": 2, "max_replicas": 5})
    upload = typed_round_trip(deploy_vertex.upload_request(
        "gs://b/model", "digits", options, deploy_vertex.parent(options)))
    container = upload["model"]["container_spec"]
    assert container["image_uri"] == options.image
    assert container["command"][-6:] == ["--precomputed", "gs://b/predictions",
                                         "--precomputed-key", "id", "--batch-size", "64"]
    assert container["ports"] == [{"container_port": 8080}]
    assert {"predict_route", "health_route"} <= set(container)
    assert upload["model"]["artifact_uri"] == "gs://b/model"
    assert upload["model"]["labels"] == deploy_vertex.LABELS

    new = RecordingEndpoints()  # deploy() creates an endpoint, then deploys the model on it
    deploy_vertex.deploy("gs://b/model", "digits", options, deploy_vertex.Clients(
        "europe-west4", RecordingModels(), new))
    (endpoint,) = new.created
    assert typed_round_trip(endpoint)["labels"] == deploy_vertex.LABELS
    ((deployed, split),) = new.deployed
    assert typed_round_trip(deployed)["dedicated_resources"] == {
        "machine_spec": {"machine_type": "n1-highcpu-8"}, "min_replica_count": 2,
        "max_replica_count": 5}
    assert split == {"0": 100}


def test_a_canary_on_an_existing_endpoint_sends_a_typed_traffic_split():
    from google.cloud import aiplatform_v1 as v1

    options = deploy_options.parse_options("vertex", {
        "project": "p", "region": "europe-west4", "endpoint": "42", "traffic_percent": 30})
    existing = RecordingEndpoints(v1.Endpoint(name=f"{PARENT}/endpoints/42",
                                              traffic_split={"5": 100}))
    deploy_vertex.deploy("gs://b/model", "digits", options, deploy_vertex.Clients(
        "europe-west4", RecordingModels(), existing))
    ((deployed, split),) = existing.deployed
    request = typed_round_trip(v1.DeployModelRequest(
        endpoint=f"{PARENT}/endpoints/42", deployed_model=deployed, traffic_split=split))
    assert request["traffic_split"] == {"0": 30, "5": 70}
    assert not existing.created


PARENT = "projects/p/locations/europe-west4"


class RecordingModels:
    def upload_model(self, request):
        from google.cloud import aiplatform_v1 as v1

        return Done(v1.UploadModelResponse(model=f"{PARENT}/models/7"))


class RecordingEndpoints:
    """Vertex AI's Endpoint service as far as deploy() calls it, keeping the typed messages
    it is sent."""

    def __init__(self, existing=None):
        self.existing, self.created, self.deployed = existing, [], []

    def get_endpoint(self, name):
        return self.existing

    def create_endpoint(self, parent, endpoint):
        from google.cloud import aiplatform_v1 as v1

        self.created.append(endpoint)
        return Done(v1.Endpoint(name=f"{parent}/endpoints/42"))

    def deploy_model(self, endpoint, deployed_model, traffic_split):
        from google.cloud import aiplatform_v1 as v1

        self.deployed.append((deployed_model, dict(traffic_split)))
        return Done(v1.DeployModelResponse(deployed_model=v1.DeployedModel(id="9")))
