"""The TrainJob the trainjob launcher renders from a cluster shape and launcher_options, and
the replica names it gives the pods' logs (the launcher against an API server:
test_trainjob_launcher.py)."""

from tfkfp.components._image import IMAGE
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train.launchers import job, trainjob


def config(strategy="default", **fields):
    return TrainConfig(dataset="gs://b/data", model_dir="gs://b/run/train/model",
                       strategy=strategy, **fields)


def test_the_trainjob_runs_every_task_as_a_node_of_the_suites_runtime():
    shape = ClusterShape("parameter_server", chief=1, workers=2, ps=1)
    options = job.parse_options("trainjob", {"gpus": 1, "cpu": "4", "memory": "16Gi",
                                             "deadline_seconds": 600, "runtime": "tf-gpu"})
    plan = job.plan(config("parameter_server"), "trainjob", options)
    body = trainjob.manifest(shape, plan, options, "train-1", "team")
    assert body["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert body["metadata"] == {"name": "train-1", "namespace": "team", "labels": {
        "app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "train"}}
    spec = body["spec"]
    assert spec["runtimeRef"] == {"name": "tf-gpu", "apiGroup": "trainer.kubeflow.org",
                                  "kind": "ClusterTrainingRuntime"}
    assert spec["activeDeadlineSeconds"] == 600
    trainer = spec["trainer"]
    assert trainer["numNodes"] == 4 and trainer["image"] == IMAGE
    assert trainer["command"] == ["python", "-m", "tfkfp.components.train.worker",
                                  "gs://b/run/train/model-job/config.json",
                                  "gs://b/run/train/model-job/result.json"]
    assert trainer["resourcesPerNode"] == {
        "requests": {"cpu": "4", "memory": "16Gi"},
        "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}
    assert "runtimePatches" not in spec  # the runtime's service account, no shared volume


def test_the_trainjob_patches_in_the_service_account_and_the_shared_volume():
    options = job.parse_options("trainjob", {"service_account": "sa", "volume_claim": "data",
                                             "mount_path": "/data"})
    plan = job.plan(config(), "trainjob", options)
    body = trainjob.manifest(ClusterShape("default", chief=1), plan, options, "t", "ns")
    (patch,) = body["spec"]["runtimePatches"]
    assert patch["manager"] == trainjob.PATCH_MANAGER
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node"
    pod = node["template"]["spec"]["template"]["spec"]
    assert pod == {"serviceAccountName": "sa",
                   "volumes": [{"name": "shared", "persistentVolumeClaim": {
                       "claimName": "data"}}],
                   "containers": [{"name": "node", "volumeMounts": [
                       {"name": "shared", "mountPath": "/data"}]}]}


def test_trainjob_pods_are_named_by_the_task_at_their_completion_index():
    from types import SimpleNamespace as NS

    name = trainjob.replica_namer(ClusterShape("parameter_server", chief=1, workers=2, ps=1))
    names = [name(NS(metadata=NS(annotations={trainjob.COMPLETION_INDEX: str(i)})))
             for i in range(4)]
    assert names == ["chief-0", "worker-0", "worker-1", "ps-0"]
