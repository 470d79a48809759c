"""The NetworkPolicy deploy_model keeps beside each InferenceService it writes: only the
namespace's own pods, the ingress gateway's namespaces (``ingress_namespaces``) and, in
knative mode, Knative Serving's (its activator buffers requests and its autoscaler reads the
queue-proxy) may reach the predictor's pods. Built with the ``kubernetes`` client's typed
models, so a malformed policy is refused before it is sent.

It is written before the InferenceService, so no predictor pod starts unguarded, and undone
with it: deleted when the service this step created is, put back as it was when the service's
previous spec is. The runner's Role needs get, create, update and delete on
``networking.k8s.io`` networkpolicies (manifests/base/rbac.yaml)."""

import logging
from typing import List

from tfkfp.components.common.platform import kube_api
from tfkfp.components.deploy_model.errors import DeployFailed
from tfkfp.components.deploy_model.options import DeployOptions, ingress_namespaces

log = logging.getLogger("tfkfp")

KIND = "NetworkPolicy"
KNATIVE_NAMESPACE = "knative-serving"  # Knative Serving's activator and autoscaler
# The label KServe puts on every pod of an InferenceService, and the one Kubernetes (1.21+)
# puts on every namespace.
SERVICE_POD_LABEL = "serving.kserve.io/inferenceservice"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
LABELS = {"app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "serve"}
RBAC_HINT = ("May this service account manage NetworkPolicies (Role tfkfp-deployer, "
             "manifests/base/rbac.yaml)?")


def policy_name(service: str) -> str:
    return f"{service}-tfkfp-ingress"


def caller_namespaces(options: DeployOptions) -> List[str]:
    """The namespaces besides its own whose pods may call the predictor."""
    extra = [KNATIVE_NAMESPACE] if options.mode == "knative" else []
    return list(dict.fromkeys(ingress_namespaces(options) + extra))


def render(service: str, namespace: str, options: DeployOptions):
    """The V1NetworkPolicy selecting the service's pods: ingress from this namespace's pods
    and from every pod of the caller namespaces; nothing else."""
    from kubernetes import client

    peers = [client.V1NetworkPolicyPeer(pod_selector=client.V1LabelSelector())]
    peers += [client.V1NetworkPolicyPeer(namespace_selector=client.V1LabelSelector(
        match_labels={NAMESPACE_NAME_LABEL: name})) for name in caller_namespaces(options)
        if name != namespace]
    return client.V1NetworkPolicy(
        api_version="networking.k8s.io/v1", kind=KIND,
        metadata=client.V1ObjectMeta(name=policy_name(service), namespace=namespace,
                                     labels=dict(LABELS)),
        spec=client.V1NetworkPolicySpec(
            pod_selector=client.V1LabelSelector(match_labels={SERVICE_POD_LABEL: service}),
            policy_types=["Ingress"], ingress=[client.V1NetworkPolicyIngressRule(_from=peers)]))


def read(networking, namespace: str, name: str):
    """The policy now in place, or None."""
    from kubernetes import client

    try:
        return networking.read_namespaced_network_policy(name, namespace)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise DeployFailed(f"cannot read {KIND} {namespace}/{name}: {err.status} "
                           f"{err.reason}: {kube_api.api_message(err)}. {RBAC_HINT}") from None


def write(networking, policy, previous) -> None:
    """Create the policy, or replace ``previous`` with it."""
    from kubernetes import client

    namespace, name = policy.metadata.namespace, policy.metadata.name
    try:
        if previous is None:
            networking.create_namespaced_network_policy(namespace, policy)
        else:
            policy.metadata.resource_version = previous.metadata.resource_version
            networking.replace_namespaced_network_policy(name, namespace, policy)
    except client.ApiException as err:
        raise DeployFailed(f"could not {'create' if previous is None else 'update'} {KIND} "
                           f"{namespace}/{name}: {err.status} {err.reason}: "
                           f"{kube_api.api_message(err)}. {RBAC_HINT}") from None
    log.info("%s %s %s/%s: ingress from %s", "created" if previous is None else "updated",
             KIND, namespace, name, _sources(policy))


def undo(networking, namespace: str, name: str, previous) -> None:
    """Delete the policy this step created, or put ``previous`` back (best effort: the
    step's own error is on its way)."""
    with kube_api.undoing(f"undo {KIND} {namespace}/{name}", log):
        if previous is None:
            networking.delete_namespaced_network_policy(name, namespace)
            log.info("deleted %s %s/%s", KIND, namespace, name)
            return
        current = networking.read_namespaced_network_policy(name, namespace)
        current.spec, current.metadata.labels = previous.spec, previous.metadata.labels
        networking.replace_namespaced_network_policy(name, namespace, current)
        log.info("put back the previous %s %s/%s", KIND, namespace, name)


def _sources(policy) -> str:
    names = [peer.namespace_selector.match_labels[NAMESPACE_NAME_LABEL]
             for peer in policy.spec.ingress[0]._from if peer.namespace_selector]
    return ", ".join(["this namespace's pods", *names])
