"""The kserve target: a KServe InferenceService created or updated through the ``kubernetes``
client, then followed until it is Ready, fails or passes its deadline.

The predictor is either ``tfkfp serve`` in the suite's image (SavedModel or TFLite bundle;
KServe's storage initializer downloads ``STORAGE_URI`` into /mnt/models) or KServe's
TensorFlow Serving runtime (``modelFormat: tensorflow``) for a SavedModel published into a
numbered version folder. In standard mode (KServe 0.16+'s name for RawDeployment) a
HorizontalPodAutoscaler follows CPU and an update replaces the predictor whole; in knative mode
(Serverless) an update may take a canary share of the traffic, the autoscaler follows
concurrency or requests per second and the predictor may scale to zero.

The predictor runs with least privilege (least_privilege.py: an allow-listed image and
service account, no token, non-root, read-only root filesystem) and a NetworkPolicy
(network_policy.py) lets only its callers reach it.

A cancelled step (SIGTERM) or a missed deadline deletes a service this step created and puts
back the previous spec of one it updated (and its NetworkPolicy likewise); a failure the
service reports is kept for ``kubectl describe`` when this step created it."""

import copy
import logging
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.model import routes
from tfkfp.components.common.platform import kube_api
from tfkfp.components.common.platform.follow import follow
from tfkfp.components.common.platform.signals import sigterm_raises
from tfkfp.components.deploy_model import least_privilege, network_policy
from tfkfp.components.deploy_model.errors import DeployFailed, DeployReportedFailure
from tfkfp.components.deploy_model.options import DeployOptions

log = logging.getLogger("tfkfp")

GROUP, VERSION, PLURAL, KIND = "serving.kserve.io", "v1beta1", "inferenceservices", \
    "InferenceService"
MODEL_DIR = "/mnt/models"  # where KServe's storage initializer puts STORAGE_URI
HTTP_PORT = 8080  # what KServe routes to in a custom predictor
MODEL_URI_ANNOTATION = "tfkfp.dev/model-uri"  # the model serving now, for the deploy gate
MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
# The annotation's values by mode: the names before KServe 0.16, which 0.16+ still parses,
# while 0.15 and earlier would read "Standard" or "Knative" as unknown and fall back to
# Knative.
MODE_ANNOTATION_VALUES = {"standard": "RawDeployment", "knative": "Serverless"}
LABELS = {"app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "serve"}
# Reported by KServe when the model cannot load or the spec is wrong: no point waiting.
FAILED_TRANSITIONS = ("BlockedByFailedLoad", "InvalidSpec")
FAILED_REASONS = ("RevisionFailed",)  # Knative: the new revision's pods fail
INSTALL_HINT = ("Is KServe installed (kubectl get crd inferenceservices.serving.kserve.io), "
                "and may this service account create InferenceServices (Role tfkfp-deployer, "
                "manifests/base/rbac.yaml)?")


def manifest(name: str, namespace: str, storage_uri: str, model_uri: str,
             options: DeployOptions) -> Dict[str, Any]:
    """The InferenceService for a model published at ``storage_uri``; ``model_uri`` (the
    model artifact) is recorded so a later deploy gate can find what is serving."""
    predictor = {"minReplicas": options.min_replicas, "maxReplicas": options.max_replicas,
                 **least_privilege.pod_settings(options)}
    if options.scale_metric:
        predictor["scaleMetric"] = options.scale_metric
    if options.scale_target:
        predictor["scaleTarget"] = options.scale_target
    if options.traffic_percent < 100:
        predictor["canaryTrafficPercent"] = options.traffic_percent
    resources = {"requests": {"cpu": options.cpu, "memory": options.memory},
                 "limits": {"cpu": options.cpu, "memory": options.memory}}
    hardened = least_privilege.container_settings()
    if options.runtime == "tfserving":
        predictor["model"] = {"modelFormat": {"name": "tensorflow"},
                              "runtimeVersion": options.tfserving_version,
                              "storageUri": storage_uri, "resources": resources, **hardened}
    else:
        predictor["containers"] = [{
            "name": "kserve-container", "image": options.image,
            "command": serve_command(name, options),
            "env": [{"name": "STORAGE_URI", "value": storage_uri},
                    {"name": "PYTHONUNBUFFERED", "value": "1"},
                    *least_privilege.scratch_env()],
            "ports": [{"containerPort": HTTP_PORT, "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": routes.HEALTH_READY, "port": HTTP_PORT}},
            "resources": resources, **hardened}]
    annotations = {MODE_ANNOTATION: MODE_ANNOTATION_VALUES[options.mode],
                   MODEL_URI_ANNOTATION: model_uri}
    if options.mode == "standard":
        annotations["serving.kserve.io/autoscalerClass"] = "hpa"
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELS),
                         "annotations": annotations},
            "spec": {"predictor": predictor}}


def serve_command(name: str, options: DeployOptions) -> List[str]:
    """``tfkfp serve`` on the downloaded model, on KServe's port on every interface (its
    default is loopback only), threads from the limit."""
    command = ["tfkfp", "serve", MODEL_DIR, "--name", name, "--host", "0.0.0.0", "--port",
               str(HTTP_PORT)]
    if options.precomputed_uri:
        command += ["--precomputed", options.precomputed_uri,
                    "--precomputed-key", options.precomputed_key]
    return command + options.serve_args.split()


def deploy(body: Dict[str, Any], options: DeployOptions, api=None) -> Dict[str, Any]:
    """Write the NetworkPolicy, create or update the InferenceService and return it once
    Ready for this spec; raise DeployFailed when it reports a failure or is not Ready by the
    deadline."""
    from kubernetes import client

    api = api or kube_api.api_client()
    objects, networking = client.CustomObjectsApi(api), client.NetworkingV1Api(api)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    policy = network_policy.render(name, namespace, options)
    with sigterm_raises("deploy"):  # before writing, so a cancel never leaves it half-done
        previous = _get(objects, namespace, name)
        previous_policy = network_policy.read(networking, namespace, policy.metadata.name)

        def undo() -> None:
            if previous is None:
                _delete(objects, namespace, name)
            else:
                _restore(objects, namespace, name, previous)
            network_policy.undo(networking, namespace, policy.metadata.name, previous_policy)

        network_policy.write(networking, policy, previous_policy)  # no pod starts unguarded
        try:
            written = _write(objects, body, previous)
        except BaseException:
            network_policy.undo(networking, namespace, policy.metadata.name, previous_policy)
            raise
        try:
            return _wait_ready(objects, namespace, name, written["metadata"]["generation"],
                               options)
        except DeployReportedFailure as failure:
            if previous is not None:
                undo()
                raise
            raise DeployReportedFailure(f"{failure}; kept for `kubectl describe "
                                        f"inferenceservice -n {namespace} {name}`") from None
        except BaseException:
            undo()
            raise


def endpoint_urls(service: Dict[str, Any]) -> Tuple[str, str]:
    """(the URL inside the cluster, the external URL) of a Ready InferenceService."""
    status = service.get("status") or {}
    external = status.get("url") or ""
    internal = (status.get("address") or {}).get("url") or external
    return internal, external


def serving_model_uri(name: str, namespace: str, api=None) -> str:
    """The model artifact a tfkfp-deployed InferenceService serves now ("" if none)."""
    from kubernetes import client

    objects = client.CustomObjectsApi(api or kube_api.api_client())
    service = _get(objects, namespace, name)
    if service is None:
        return ""
    return (service["metadata"].get("annotations") or {}).get(MODEL_URI_ANNOTATION, "")


def _get(objects, namespace: str, name: str) -> Dict[str, Any] | None:
    from kubernetes import client

    try:
        return objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise DeployFailed(f"cannot read {KIND} {namespace}/{name}: {err.status} "
                           f"{err.reason}: {kube_api.api_message(err)}. {INSTALL_HINT}") \
            from None


def _write(objects, body: Dict[str, Any], previous: Dict[str, Any] | None) -> Dict[str, Any]:
    from kubernetes import client

    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        if previous is None:
            written = objects.create_namespaced_custom_object(GROUP, VERSION, namespace,
                                                              PLURAL, body)
            log.info("created %s %s/%s", KIND, namespace, name)
        else:
            update = copy.deepcopy(body)
            update["metadata"]["resourceVersion"] = previous["metadata"]["resourceVersion"]
            written = objects.replace_namespaced_custom_object(GROUP, VERSION, namespace,
                                                               PLURAL, name, update)
            log.info("updated %s %s/%s (was serving %s)", KIND, namespace, name,
                     (previous["metadata"].get("annotations") or {}).get(
                         MODEL_URI_ANNOTATION, "a model not deployed by tfkfp"))
    except client.ApiException as err:
        raise DeployFailed(f"could not {'create' if previous is None else 'update'} {KIND} "
                           f"{namespace}/{name}: {err.status} {err.reason}: "
                           f"{kube_api.api_message(err)}. {INSTALL_HINT}") from None
    return written


def _wait_ready(objects, namespace: str, name: str, generation: int,
                options: DeployOptions) -> Dict[str, Any]:
    """Poll until the service is Ready for ``generation``; raise DeployReportedFailure on a
    failure it reports, DeployFailed at the deadline (with its last reason). Reading it
    survives the API's hiccups (common/platform/follow.py)."""
    seen = None

    def status_of(service: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
        status = service.get("status") or {}
        return status, status.get("observedGeneration", generation) >= generation

    def observe(service: Dict[str, Any]) -> None:
        nonlocal seen
        status, current = status_of(service)
        ready = _condition(status, "Ready")
        if current and ready and ready != seen:
            seen = ready
            log.info("%s %s/%s: Ready %s %s", KIND, namespace, name, ready.get("status"),
                     ready.get("reason") or ready.get("message") or "")
        ready_now = current and ready and ready.get("status") == "True"
        failure = _failure(status) if current and not ready_now else ""
        if failure:
            raise DeployReportedFailure(f"{KIND} {namespace}/{name} failed: {failure}")

    def is_ready(service: Dict[str, Any]) -> bool:
        status, current = status_of(service)
        ready = _condition(status, "Ready")
        return bool(current and ready and ready.get("status") == "True")

    def expired(service: Dict[str, Any] | None) -> BaseException:
        return DeployFailed(
            f"{KIND} {namespace}/{name} was not Ready within {options.deadline_seconds} s "
            f"(deploy_options deadline_seconds): {_pending(status_of(service or {})[0])}")

    return follow(f"{KIND} {namespace}/{name}",
                  lambda: objects.get_namespaced_custom_object(GROUP, VERSION, namespace,
                                                               PLURAL, name),
                  is_ready, interval=options.poll_seconds,
                  deadline=options.deadline_seconds, observe=observe, expired=expired,
                  describe=lambda service: _pending(status_of(service)[0]))


def _condition(status: Dict[str, Any], kind: str) -> Dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _failure(status: Dict[str, Any]) -> str:
    """The service's own reason, when it says the deployment cannot become Ready."""
    model = status.get("modelStatus") or {}
    if model.get("transitionStatus") in FAILED_TRANSITIONS:
        info = model.get("lastFailureInfo") or {}
        return (f"{model['transitionStatus']}: {info.get('reason', '')} "
                f"{info.get('message', '')}").strip()
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False" and condition.get("reason") in FAILED_REASONS:
            return (f"{condition['type']} {condition['reason']}: "
                    f"{condition.get('message', '')}").strip()
    return ""


def _pending(status: Dict[str, Any]) -> str:
    waiting = [f"{c.get('type')} {c.get('reason') or c.get('status')}"
               f"{': ' + c['message'] if c.get('message') else ''}"
               for c in status.get("conditions") or [] if c.get("status") != "True"]
    return "; ".join(waiting) or "no status from the KServe controller (is it running?)"


def _delete(objects, namespace: str, name: str) -> None:
    with kube_api.undoing(f"delete {KIND} {namespace}/{name}", log):
        objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                propagation_policy="Background")
        log.info("deleted %s %s/%s", KIND, namespace, name)


def _restore(objects, namespace: str, name: str, previous: Dict[str, Any]) -> None:
    """Put the previous spec and annotations back (best effort: another error is on its
    way)."""
    with kube_api.undoing(f"put back the previous spec of {KIND} {namespace}/{name}", log,
                          missing_ok=False):
        current = objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        current["spec"] = previous["spec"]
        current["metadata"]["annotations"] = previous["metadata"].get("annotations") or {}
        objects.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                 current)
        log.info("put back the previous spec of %s %s/%s", KIND, namespace, name)
