"""A Kubeflow Trainer v2 TrainJob on a ClusterTrainingRuntime (the suite's is in
manifests/trainer), as train's trainjob launcher and tune's multi-worker Katib trials render
it: the runtime, one node per task, the resources per node, and the pod fields the runtime
is patched with (another service account, the shared volume)."""

from typing import Any, Dict, List

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
RUNTIME_KIND = "ClusterTrainingRuntime"
NODE = "node"  # Trainer's name for the trainer's replicated job and its container
SHARED_VOLUME = "shared"  # the volume_claim's name in a pod


def node_resources(cpu: str, memory: str, gpus: int) -> Dict[str, Any]:
    """Requests and limits of one pod: limits as the requests (they replace the runtime's,
    which a larger request would exceed), and ``gpus`` nvidia.com/gpu where there are any
    (as a quantity string, the form the API server answers with)."""
    resources: Dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory},
                                 "limits": {"cpu": cpu, "memory": memory}}
    if gpus:
        resources["limits"]["nvidia.com/gpu"] = str(gpus)
    return resources


def pod_patch(service_account: str, volume_claim: str, mount_path: str) -> Dict[str, Any]:
    """What the nodes' pods need beyond the runtime: another service account, the shared
    volume. A runtime patch holds only the pod fields Trainer lets a TrainJob change; the
    token stays unmounted because the runtime's pod template says so
    (``automountServiceAccountToken: false``, manifests/trainer), whatever the account."""
    patch: Dict[str, Any] = {}
    if service_account:
        patch["serviceAccountName"] = service_account
    if volume_claim:
        patch["volumes"] = [{"name": SHARED_VOLUME, "persistentVolumeClaim": {
            "claimName": volume_claim}}]
        patch["containers"] = [{"name": NODE, "volumeMounts": [
            {"name": SHARED_VOLUME, "mountPath": mount_path}]}]
    return patch


def trainjob_spec(runtime: str, image: str, command: List[str], nodes: int,
                  resources: Dict[str, Any], patch: Dict[str, Any],
                  patch_manager: str) -> Dict[str, Any]:
    """A TrainJob's spec: ``nodes`` nodes of ``runtime`` running ``command`` in ``image``;
    a non-empty ``patch`` (pod_patch) goes in the runtime patch owned by ``patch_manager``."""
    spec: Dict[str, Any] = {
        "runtimeRef": {"name": runtime, "apiGroup": GROUP, "kind": RUNTIME_KIND},
        "trainer": {"image": image, "command": command, "numNodes": nodes,
                    "resourcesPerNode": resources}}
    if patch:
        spec["runtimePatches"] = [{"manager": patch_manager, "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [
                {"name": NODE, "template": {"spec": {"template": {"spec": patch}}}}]}}}}]
    return spec
