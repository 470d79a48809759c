"""The vertex target: upload the model to the Vertex AI Model Registry with ``tfkfp serve`` as
its serving container, then deploy it to an Endpoint (a new one, or an existing one sharing
its traffic). Both resources are named in ``gcp_resources``; a cancelled step cancels the
deployment and deletes what it created."""

import logging
import uuid
from typing import Any, Dict, List

from tfkfp.components.common.model import routes
from tfkfp.components.common.platform import vertex_jobs
from tfkfp.components.common.platform.signals import sigterm_raises
from tfkfp.components.deploy_model.errors import DeployConfigError, DeployFailed
from tfkfp.components.deploy_model.options import DeployOptions

log = logging.getLogger("tfkfp")

HTTP_PORT = 8080
LABELS = {"app": "tfkfp", "component": "serve"}


class Clients:
    """The two Vertex AI services this target calls (injected in tests)."""

    def __init__(self, region: str, models=None, endpoints=None):
        from google.cloud import aiplatform_v1 as v1

        api = {"api_endpoint": f"{region}-aiplatform.googleapis.com"}
        self.models = models or v1.ModelServiceClient(client_options=api)
        self.endpoints = endpoints or v1.EndpointServiceClient(client_options=api)


def parent(options: DeployOptions) -> str:
    project = options.project
    if not project:
        import google.auth

        _, project = google.auth.default()
    if not project:
        raise DeployConfigError("target 'vertex' needs a Google Cloud project: set "
                                "deploy_options project")
    return f"projects/{project}/locations/{options.region}"


def endpoint_name(options: DeployOptions, where: str) -> str:
    return options.endpoint if options.endpoint.startswith("projects/") else \
        f"{where}/endpoints/{options.endpoint}"


def upload_request(artifact_uri: str, name: str, options: DeployOptions, where: str):
    """The UploadModelRequest: Vertex AI copies ``artifact_uri`` and names the copy in
    AIP_STORAGE_URI, which the container's command reads."""
    from google.cloud import aiplatform_v1 as v1

    command = ["tfkfp", "serve", "$(AIP_STORAGE_URI)", "--name", name, "--host", "0.0.0.0",
               "--port", str(HTTP_PORT)]  # every interface: Vertex AI calls from outside
    if options.precomputed_uri:
        command += ["--precomputed", options.precomputed_uri,
                    "--precomputed-key", options.precomputed_key]
    container = v1.ModelContainerSpec(
        image_uri=options.image, command=command + options.serve_args.split(),
        ports=[v1.Port(container_port=HTTP_PORT)],
        predict_route=routes.v1_predict(name), health_route=routes.HEALTH_READY)
    return v1.UploadModelRequest(parent=where, model=v1.Model(
        display_name=name, artifact_uri=artifact_uri, container_spec=container,
        labels=dict(LABELS)))


def traffic_split(current: Dict[str, int], percent: int) -> Dict[str, int]:
    """The new model ("0") gets ``percent``; the models already there share the rest in
    their current proportions, summing to exactly 100."""
    rest = 100 - percent
    total = sum(current.values())
    split = {"0": percent}
    if rest and total:
        shares = {k: v * rest // total for k, v in current.items() if v}
        leftover = rest - sum(shares.values())
        for key in sorted(shares, key=lambda k: -current[k])[:leftover]:
            shares[key] += 1
        split.update(shares)
    elif rest:
        raise DeployConfigError(f"traffic_percent {percent} leaves {rest}% to models already "
                                "on the endpoint, but it has none serving: deploy with 100")
    return split


def deploy(artifact_uri: str, name: str, options: DeployOptions, clients: Clients | None = None,
           gcp_resources: str = "") -> Dict[str, Any]:
    """Upload and deploy; return a description of the deployment. Raise DeployFailed with
    Vertex AI's error when either step fails or outlives the deadline."""
    from google.cloud import aiplatform_v1 as v1

    if not artifact_uri.startswith("gs://"):
        raise DeployConfigError(f"target 'vertex' reads the model from Cloud Storage; "
                                f"{artifact_uri} is not a gs:// URI (set deploy_options "
                                "storage_uri to a gs:// folder to publish it there)")
    clients = clients or Clients(options.region)
    where = parent(options)
    created: List[tuple] = []  # (resource type, name), to name and to undo
    operation = None
    with sigterm_raises("deploy"):
        try:
            model = _wait(clients.models.upload_model(
                request=upload_request(artifact_uri, name, options, where)),
                options, "uploading the model").model
            created.append(("Model", model))
            endpoint = _endpoint(clients, options, where, name, created)
            _record(gcp_resources, [("Model", model), ("Endpoint", endpoint.name)])
            split = traffic_split(dict(endpoint.traffic_split), options.traffic_percent)
            deployed = v1.DeployedModel(
                model=model, display_name=name,
                dedicated_resources=v1.DedicatedResources(
                    machine_spec=v1.MachineSpec(machine_type=options.machine_type),
                    min_replica_count=max(1, options.min_replicas),
                    max_replica_count=options.max_replicas))
            operation = clients.endpoints.deploy_model(
                endpoint=endpoint.name, deployed_model=deployed, traffic_split=split)
            result = _wait(operation, options, f"deploying to {endpoint.name}")
        except BaseException:
            if operation is not None:
                _cancel(operation)
            _undo(clients, created)
            raise
    log.info("deployed %s to %s as %s (traffic %s)", model, endpoint.name,
             result.deployed_model.id, split)
    return {"target": "vertex", "model_resource": model, "endpoint": endpoint.name,
            "deployed_model_id": result.deployed_model.id, "traffic_split": split,
            "url": vertex_jobs.resource_uri(endpoint.name)}


def _endpoint(clients: Clients, options: DeployOptions, where: str, name: str,
              created: List[tuple]):
    from google.cloud import aiplatform_v1 as v1

    if options.endpoint:
        return clients.endpoints.get_endpoint(name=endpoint_name(options, where))
    endpoint = _wait(clients.endpoints.create_endpoint(
        parent=where, endpoint=v1.Endpoint(display_name=f"{name}-{uuid.uuid4().hex[:6]}",
                                           labels=dict(LABELS))),
        options, "creating the endpoint")
    created.append(("Endpoint", endpoint.name))
    return endpoint


def _wait(operation, options: DeployOptions, what: str):
    try:
        return operation.result(timeout=options.deadline_seconds)
    except Exception as err:  # the API's own error type varies by failure: name it
        raise DeployFailed(f"Vertex AI: {what} failed or passed deploy_options "
                           f"deadline_seconds {options.deadline_seconds}: {err}") from err


def _cancel(operation) -> None:
    try:
        operation.cancel()
        log.info("cancelled the deployment operation")
    except Exception as err:  # noqa: BLE001 - the step's own error must surface
        log.warning("could not cancel the deployment operation: %s", err)


def _record(path: str, resources) -> None:
    if path:
        vertex_jobs.write_gcp_resources(path, resources)


def _undo(clients: Clients, created: List[tuple]) -> None:
    """Delete what this step created, newest first (best effort: an error is on its way)."""
    for kind, name in reversed(created):
        try:
            if kind == "Endpoint":
                clients.endpoints.delete_endpoint(name=name)
            else:
                clients.models.delete_model(name=name)
            log.info("deleted Vertex AI %s %s", kind, name)
        except Exception as err:  # noqa: BLE001 - the step's own error must surface
            log.warning("could not delete Vertex AI %s %s: %s", kind, name, err)


def serving_model_uri(options: DeployOptions, clients: Clients | None = None) -> str:
    """The artifact URI of the model taking most of the endpoint's traffic ("" if none)."""
    if not options.endpoint:
        return ""
    clients = clients or Clients(options.region)
    endpoint = clients.endpoints.get_endpoint(name=endpoint_name(options, parent(options)))
    split = dict(endpoint.traffic_split)
    if not split:
        return ""
    busiest = max(split, key=split.get)
    model = next((d.model for d in endpoint.deployed_models if d.id == busiest), "")
    return clients.models.get_model(name=model).artifact_uri if model else ""
