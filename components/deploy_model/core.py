"""deploy_model: put a tfkfp model behind an endpoint.

Targets, in the pattern of train's launchers: ``kserve`` (a KServe InferenceService, made
through the kubernetes client: kserve.py), ``vertex`` (a Vertex AI Endpoint: vertex.py) and
``existing`` (an endpoint that already serves the model, e.g. a `tfkfp serve` started by
hand: only checked for readiness). Options are checked before anything is published or
created (options.py), and so is every option that picks the code served (the kserve
predictor's image or TF Serving version, the vertex image) and the kserve service account,
against the admin's allow-list (least_privilege.py)."""

import dataclasses
import json
import logging
import time
from typing import Any, Dict

from tfkfp.components.common.endpoint.client import Answer, EndpointClient
from tfkfp.components.common.model import routes
from tfkfp.components.common.platform import kube_api
from tfkfp.components.deploy_model import kserve, least_privilege, publish, vertex
from tfkfp.components.deploy_model.errors import DeployFailed
from tfkfp.components.deploy_model.options import DeployOptions, check_name, parse_options

log = logging.getLogger("tfkfp")


@dataclasses.dataclass(frozen=True)
class Deployment:
    target: str
    name: str
    endpoint_url: str  # where predictions go (inside the cluster for kserve)
    model_uri: str
    description: Dict[str, Any]  # what the engine reported: resources, URLs, traffic

    def metadata(self) -> Dict[str, Any]:
        return {"target": self.target, "name": self.name, "endpoint_url": self.endpoint_url,
                "model_uri": self.model_uri, **self.description}


def check_request(target: str, name: str, deploy_options: Dict[str, Any] | None
                  ) -> DeployOptions:
    """Everything that can be checked without the model or the engine."""
    check_name(name)
    return parse_options(target, deploy_options)


def deploy_model(model_uri: str, target: str, name: str,
                 deploy_options: Dict[str, Any] | None = None, gcp_resources: str = "",
                 model_path: str = "", api=None, vertex_clients=None) -> Deployment:
    """Deploy the model and return once the endpoint is ready (see the module docstring).

    Args:
        model_uri: the model artifact's URI (what the engine reads): a tfkfp SavedModel or
            TFLite bundle folder.
        target: kserve, vertex or existing.
        name: the service's name (and the model's name in its URLs).
        deploy_options: by target (options.DeployOptions).
        gcp_resources: where to name the Vertex AI resources (vertex; "" for nowhere).
        model_path: where this process reads the model (a pipeline step's local copy);
            default ``model_uri``.
        api, vertex_clients: injected Kubernetes API client and Vertex AI clients (tests).
    """
    options = check_request(target, name, deploy_options)
    if target == "existing":
        return _existing(model_uri, name, options)
    local = model_path or model_uri
    kind = publish.model_kind(local)
    if target == "vertex":
        least_privilege.check_vertex_allowed(options, api)  # before publishing anything
        artifact = publish.publish(local, options.storage_uri) if options.storage_uri \
            else model_uri
        described = vertex.deploy(artifact, name, options, vertex_clients, gcp_resources)
        return Deployment(target, name, described["url"], model_uri, described)
    namespace = options.namespace or kube_api.default_namespace()
    least_privilege.check_allowed(options, namespace, api)  # before publishing anything
    if gcp_resources:
        from tfkfp.components.common.platform.vertex_jobs import write_gcp_resources

        write_gcp_resources(gcp_resources)  # nothing on Google Cloud
    storage = publish.kserve_storage_uri(local, model_uri, kind, options.runtime,
                                         options.storage_uri)
    body = kserve.manifest(name, namespace, storage, model_uri, options)
    service = kserve.deploy(body, options, api)
    internal, external = kserve.endpoint_urls(service)
    return Deployment(target, name, internal, model_uri, {
        "namespace": namespace, "runtime": options.runtime, "mode": options.mode,
        "storage_uri": storage, "external_url": external,
        "traffic_percent": options.traffic_percent,
        "canary": options.traffic_percent < 100})  # options allow one in knative mode only


def serving_model_uri(target: str, name: str, deploy_options: Dict[str, Any] | None = None,
                      api=None, vertex_clients=None) -> str:
    """The model the target serves now under this name ("": none): as deploy_model recorded
    it (kserve, vertex), or the endpoint's own model URL (existing: endpoint_model.py)."""
    options = check_request(target, name, deploy_options)
    if target == "kserve":
        return kserve.serving_model_uri(
            name, options.namespace or kube_api.default_namespace(), api)
    if target == "vertex":
        return vertex.serving_model_uri(options, vertex_clients)
    return _existing_model(name, options)


def _existing_model(name: str, options: DeployOptions) -> str:
    """An existing endpoint's model, as the gate measures it through the endpoint, when the
    endpoint reports serving a version of it ("": it serves no model of that name)."""
    from tfkfp.components.deploy_model import endpoint_model

    base = options.url.rstrip("/")
    version = endpoint_model.served_version(base, name)
    if version is None:
        return ""
    log.info("endpoint %s serves %s version %s", base, name, version)
    return endpoint_model.model_url(base, name)


def _existing(model_uri: str, name: str, options: DeployOptions) -> Deployment:
    """Wait until the endpoint says the model is ready (KServe v1: GET /v1/models/NAME)."""
    base = options.url.rstrip("/")
    client = EndpointClient(base, {}, retries=0, timeout_s=10)
    path = routes.v1_model(name)
    give_up = time.monotonic() + options.deadline_seconds
    last = ""
    while time.monotonic() <= give_up:
        try:
            answer = client.send("GET", path)
        except OSError as err:
            last = str(err)
        else:
            last = _not_ready(answer)
            if not last:
                log.info("endpoint %s serves %s", options.url, name)
                return Deployment("existing", name, base, model_uri, {"url": options.url})
        time.sleep(min(options.poll_seconds, 1.0))
    raise DeployFailed(f"endpoint {client.url(path)} did not report model {name!r} ready "
                       f"within {options.deadline_seconds} s: {last}")


def _not_ready(answer: Answer) -> str:
    """Why the model's status answer does not say ready ("": it does)."""
    if not 200 <= answer.status < 300:
        return f"{answer.status} {answer.reason}"
    try:
        ready = json.loads(answer.data).get("ready")
    except (ValueError, AttributeError) as err:
        return f"it answers, but not with the model's status ({err})"
    return "" if ready else "it answers, but the model is not ready"
