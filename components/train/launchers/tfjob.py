"""The tfjob launcher: the cluster shape as a Kubeflow Training Operator TFJob, for
installations that still run the operator (v1). launchers/kube.py creates it, follows it and
deletes it when the step is cancelled; this module renders it."""

from typing import Any, Dict

from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train.errors import TFJobFailed, TFJobReportedFailure
from tfkfp.components.train.launchers import kube
from tfkfp.components.train.launchers.spec import JobPlan, LaunchOptions, worker_command

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS"}
JOB_LABEL = "training.kubeflow.org/job-name"  # the operator labels the job's pods with it
CONTAINER = "tensorflow"  # the container name the operator expects
TFJOB = kube.JobKind(
    "TFJob", GROUP, VERSION, PLURAL, succeeded="Succeeded", container=CONTAINER,
    pod_label=JOB_LABEL, failed=TFJobFailed, reported=TFJobReportedFailure,
    install_hint="Is the Kubeflow Training Operator installed (kubectl get crd "
                 "tfjobs.kubeflow.org), and may this service account create TFJobs?")


def manifest(shape: ClusterShape, job: JobPlan, options: LaunchOptions, name: str,
             namespace: str) -> Dict[str, Any]:
    """The TFJob: one replica spec per role of the shape, each running the worker command.

    ``restartPolicy: ExitCode`` restarts a replica that was killed (exit code 128 and above:
    preemption, eviction, OOM kill) and fails the job on a user error (exit 1-127); restarted
    replicas resume from the job's checkpoints."""
    replica_specs = {
        REPLICA_TYPES[role]: {"replicas": count, "restartPolicy": "ExitCode",
                              "template": _pod_template(role, job, options)}
        for role, count in shape.replicas.items()}
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(kube.LABELS)},
        "spec": {
            "runPolicy": {"activeDeadlineSeconds": options.deadline_seconds,
                          "backoffLimit": options.backoff_limit,
                          "cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 86400},
            "tfReplicaSpecs": replica_specs}}


def _pod_template(role: str, job: JobPlan, options: LaunchOptions) -> Dict[str, Any]:
    resources = {"requests": {"cpu": options.cpu, "memory": options.memory},
                 "limits": {"memory": options.memory}}
    if options.gpus and role != "ps":
        resources["limits"]["nvidia.com/gpu"] = options.gpus
    container = {
        "name": CONTAINER,
        "image": options.image,
        "command": worker_command(job),
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": dict(kube.CONTAINER_SECURITY),
    }
    spec = {"serviceAccountName": kube.replica_values(options)["service_account"],
            "automountServiceAccountToken": False,  # replicas never call the API
            "securityContext": dict(kube.POD_SECURITY),
            "containers": [container]}
    if options.volume_claim:
        container["volumeMounts"] = [{"name": "shared", "mountPath": options.mount_path}]
        spec["volumes"] = [{"name": "shared", "persistentVolumeClaim": {
            "claimName": options.volume_claim}}]
    return {"metadata": {"labels": dict(kube.LABELS)}, "spec": spec}


def replica_of(pod) -> str:
    """A pod's replica as the operator labels it, e.g. ``worker-1``."""
    labels = pod.metadata.labels or {}
    return "{}-{}".format(labels.get("training.kubeflow.org/replica-type", "pod"),
                          labels.get("training.kubeflow.org/replica-index", "?"))


def run(shape: ClusterShape, job: JobPlan, options: LaunchOptions, gcp_resources: str = "",
        api=None) -> None:
    """Create the TFJob and return when it succeeds; raise TFJobFailed when it fails or
    passes its deadline (see kube.run). ``gcp_resources`` stays as train wrote it: a TFJob is
    no Google Cloud resource."""
    name = options.job_name or kube.default_job_name()
    body = manifest(shape, job, options, name, options.namespace or kube.default_namespace())
    summary = ", ".join(f"{n} {role}" for role, n in shape.replicas.items())
    kube.run(TFJOB, body, options, replica_of, summary, api)
