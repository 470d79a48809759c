"""The vertex target, checked on the requests it sends to fake Model and Endpoint services
(the real ones need a Google Cloud project): the serving container, the endpoint, the
traffic split, gcp_resources, and what is deleted when the deployment fails."""

import json

import pytest
from google.cloud import aiplatform_v1 as v1

from tfkfp.components.deploy_model import vertex
from tfkfp.components.deploy_model.core import deploy_model, serving_model_uri
from tfkfp.components.deploy_model.errors import DeployConfigError, DeployFailed

PARENT = "projects/p/locations/europe-west4"


class Operation:
    def __init__(self, result=None, error=None):
        self._result, self._error, self.cancelled = result, error, False

    def result(self, timeout=None):
        if self._error:
            raise self._error
        return self._result

    def cancel(self):
        self.cancelled = True


class FakeModels:
    def __init__(self):
        self.uploads, self.deleted = [], []

    def upload_model(self, request):
        self.uploads.append(request)
        return Operation(v1.UploadModelResponse(model=f"{PARENT}/models/7"))

    def delete_model(self, name):
        self.deleted.append(name)

    def get_model(self, name):
        return v1.Model(name=name, artifact_uri="gs://b/serving-model")


class FakeEndpoints:
    def __init__(self, existing=None, deploy_error=None):
        self.existing, self.deploy_error = existing, deploy_error
        self.created, self.deployed, self.deleted, self.operations = [], [], [], []

    def create_endpoint(self, parent, endpoint):
        self.created.append((parent, endpoint))
        return Operation(v1.Endpoint(name=f"{parent}/endpoints/42"))

    def get_endpoint(self, name):
        return self.existing

    def deploy_model(self, endpoint, deployed_model, traffic_split):
        self.deployed.append((endpoint, deployed_model, dict(traffic_split)))
        operation = Operation(v1.DeployModelResponse(
            deployed_model=v1.DeployedModel(id="99")), self.deploy_error)
        self.operations.append(operation)
        return operation

    def delete_endpoint(self, name):
        self.deleted.append(name)


def clients(endpoints=None):
    return vertex.Clients("europe-west4", FakeModels(), endpoints or FakeEndpoints())


OPTIONS = {"project": "p", "region": "europe-west4", "machine_type": "n1-standard-2",
           "min_replicas": 1, "max_replicas": 4}


def test_a_model_is_uploaded_with_tfkfp_serve_and_deployed_to_a_new_endpoint(
        demo_model, tmp_path):
    fakes = clients()
    resources = tmp_path / "gcp_resources"
    done = deploy_model("gs://b/run/model", "vertex", "digits", OPTIONS,
                        gcp_resources=str(resources), model_path=demo_model,
                        vertex_clients=fakes)
    (upload,) = fakes.models.uploads
    assert upload.parent == PARENT and upload.model.artifact_uri == "gs://b/run/model"
    container = upload.model.container_spec
    assert list(container.command)[:7] == ["tfkfp", "serve", "$(AIP_STORAGE_URI)", "--name",
                                           "digits", "--host", "0.0.0.0"]  # called from outside
    assert container.predict_route == "/v1/models/digits:predict"
    assert container.health_route == "/v2/health/ready"
    assert container.ports[0].container_port == 8080
    ((where, endpoint),) = fakes.endpoints.created
    assert where == PARENT and endpoint.labels["app"] == "tfkfp"
    ((name, deployed, split),) = fakes.endpoints.deployed
    assert name == f"{PARENT}/endpoints/42" and split == {"0": 100}
    resources_ = deployed.dedicated_resources
    assert (resources_.machine_spec.machine_type, resources_.min_replica_count,
            resources_.max_replica_count) == ("n1-standard-2", 1, 4)
    assert done.endpoint_url == ("https://europe-west4-aiplatform.googleapis.com/v1/"
                                 f"{PARENT}/endpoints/42")
    listed = json.loads(resources.read_text())["resources"]
    assert [r["resourceType"] for r in listed] == ["Model", "Endpoint"]
    assert listed[1]["resourceUri"].endswith(f"{PARENT}/endpoints/42")


def test_a_canary_on_an_existing_endpoint_shares_its_traffic(demo_model):
    existing = v1.Endpoint(name=f"{PARENT}/endpoints/5", traffic_split={"3": 100},
                           deployed_models=[v1.DeployedModel(id="3",
                                                             model=f"{PARENT}/models/1")])
    fakes = clients(FakeEndpoints(existing))
    done = deploy_model("gs://b/run/model", "vertex", "digits",
                        {**OPTIONS, "endpoint": "5", "traffic_percent": 10},
                        model_path=demo_model, vertex_clients=fakes)
    assert fakes.endpoints.created == []
    assert fakes.endpoints.deployed[0][2] == {"0": 10, "3": 90}
    assert done.description["traffic_split"] == {"0": 10, "3": 90}
    assert serving_model_uri("vertex", "digits", {**OPTIONS, "endpoint": "5"},
                             vertex_clients=fakes) == "gs://b/serving-model"


def test_a_failed_deployment_deletes_the_endpoint_and_model_it_created(demo_model):
    fakes = clients(FakeEndpoints(deploy_error=RuntimeError("quota exceeded for CPUs")))
    with pytest.raises(DeployFailed, match="deploying to .*endpoints/42 failed.*quota"):
        deploy_model("gs://b/run/model", "vertex", "digits", OPTIONS, model_path=demo_model,
                     vertex_clients=fakes)
    assert fakes.endpoints.operations[0].cancelled
    assert fakes.endpoints.deleted == [f"{PARENT}/endpoints/42"]
    assert fakes.models.deleted == [f"{PARENT}/models/7"]


def test_vertex_reads_models_from_cloud_storage_only(demo_model):
    with pytest.raises(DeployConfigError, match="not a gs:// URI"):
        deploy_model(demo_model, "vertex", "digits", OPTIONS, vertex_clients=clients())


def test_outside_a_cluster_only_the_steps_own_image_is_served(demo_model, tmp_path,
                                                              monkeypatch):
    """The serving image picks the code Vertex AI runs: with no admin's allow-list to read,
    only the image this step runs in, refused before anything is published or uploaded."""
    from tfkfp.components._image import IMAGE

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("TFKFP_IMAGE", raising=False)
    fakes, published = clients(), tmp_path / "published"
    with pytest.raises(DeployConfigError, match=(
            rf"deploy_options image 'evil/miner:1' is not allowed for target 'vertex' outside "
            rf"a cluster; allowed: {IMAGE} \(this step's own image")):
        deploy_model("gs://b/run/model", "vertex", "digits",
                     {**OPTIONS, "image": "evil/miner:1", "storage_uri": str(published)},
                     model_path=demo_model, vertex_clients=fakes)
    assert fakes.models.uploads == [] and not published.exists()
