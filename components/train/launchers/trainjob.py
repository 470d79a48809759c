"""The trainjob launcher: the cluster shape as a Kubeflow Trainer v2 TrainJob that references
the suite's TensorFlow runtime (the ClusterTrainingRuntime in manifests/trainer).
launchers/kube.py creates it, follows it and deletes it when the step is cancelled; this module
renders it.

Trainer v2 sizes one replicated job of a runtime, the trainer's (``numNodes``), so every task
of the shape runs as a pod of that Indexed Job and finds its role from its completion index
(jobset_replica.py): chief, workers, then parameter servers. The runtime's Job succeeds when
index 0, the chief (worker 0 when there is no chief), succeeds, as a TFJob does."""

from typing import Any, Dict

from tfkfp.components.common.platform import trainer
from tfkfp.components.common.platform.trainer import GROUP, NODE, VERSION
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train import jobset_replica
from tfkfp.components.train.errors import TrainJobFailed, TrainJobReportedFailure
from tfkfp.components.train.launchers import kube
from tfkfp.components.train.launchers.spec import JobPlan, LaunchOptions, worker_command

PLURAL = "trainjobs"
RUNTIME_KIND = trainer.RUNTIME_KIND  # the runtime a TrainJob references (manifests/trainer)
PATCH_MANAGER = "tfkfp.kubeflow.org/train"  # owner of this launcher's runtimePatches entry
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation of Indexed pods
TRAINJOB = kube.JobKind(
    "TrainJob", GROUP, VERSION, PLURAL, succeeded="Complete", container=NODE,
    pod_label=jobset_replica.LABELS[jobset_replica.ENV_JOBSET], failed=TrainJobFailed,
    reported=TrainJobReportedFailure,
    install_hint="Is Kubeflow Trainer v2 installed (kubectl get crd "
                 "trainjobs.trainer.kubeflow.org), is the suite's runtime there (kubectl get "
                 "clustertrainingruntime; kubectl apply -k manifests/trainer), and may this "
                 "service account create TrainJobs?")


def manifest(shape: ClusterShape, job: JobPlan, options: LaunchOptions, name: str,
             namespace: str) -> Dict[str, Any]:
    """The TrainJob: the runtime, one node per task of the shape, the worker command, the
    resources per node, the deadline, and the service account and shared volume as a
    runtime patch (common/platform/trainer.py)."""
    spec = trainer.trainjob_spec(
        options.runtime, options.image, worker_command(job), sum(shape.replicas.values()),
        trainer.node_resources(options.cpu, options.memory, options.gpus),
        trainer.pod_patch(options.service_account, options.volume_claim, options.mount_path),
        PATCH_MANAGER)
    spec["activeDeadlineSeconds"] = options.deadline_seconds
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(kube.LABELS)},
            "spec": spec}


def replica_namer(shape: ClusterShape):
    """``replica_of(pod)``: a pod's task from its completion index, e.g. ``ps-0``."""
    def replica_of(pod) -> str:
        index = int((pod.metadata.annotations or {})[COMPLETION_INDEX])
        return jobset_replica.task_at(shape, index).name

    return replica_of


def run(shape: ClusterShape, job: JobPlan, options: LaunchOptions, gcp_resources: str = "",
        api=None) -> None:
    """Create the TrainJob and return when it succeeds; raise TrainJobFailed when it fails or
    passes its deadline (see kube.run). ``gcp_resources`` stays as train wrote it: a TrainJob
    is no Google Cloud resource."""
    name = options.job_name or kube.default_job_name()
    body = manifest(shape, job, options, name, options.namespace or kube.default_namespace())
    summary = (f"{sum(shape.replicas.values())} nodes of runtime {options.runtime} ("
               + ", ".join(f"{n} {role}" for role, n in shape.replicas.items()) + ")")
    kube.run(TRAINJOB, body, options, replica_namer(shape), summary, api)
