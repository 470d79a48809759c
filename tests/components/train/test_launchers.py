"""One cluster shape, checked before launch and rendered by the local, tfjob, trainjob and
vertex launchers; the launchers' options and job plan; the Vertex AI CustomJob request."""

import json
import os
import signal

import pytest

from tfkfp.components._image import IMAGE
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train import launchers
from tfkfp.components.train.core import train
from tfkfp.components.train.errors import VertexJobFailed
from tfkfp.components.train.launchers import job, kube, tfjob, trainjob, vertex
from tfkfp.components.train.launchers.local import local_cluster


def placement(launcher):
    return launchers.get(launcher).placement


def config(strategy="default", **fields):
    return TrainConfig(dataset="gs://b/data", model_dir="gs://b/run/train/model",
                       strategy=strategy, **fields)


SHAPES = {  # strategy -> (shape replicas, TFJob replica types, TrainJob nodes, Vertex pools)
    "default": ({"chief": 1}, {"Chief": 1}, 1, [1]),
    "mirrored": ({"chief": 1}, {"Chief": 1}, 1, [1]),
    "multi_worker_mirrored": ({"worker": 3}, {"Worker": 3}, 3, [1, 2]),
    "parameter_server": ({"chief": 1, "worker": 3, "ps": 2}, {"Chief": 1, "Worker": 3, "PS": 2},
                         6, [1, 3, 2]),
}


@pytest.mark.parametrize("strategy", list(SHAPES))
def test_one_shape_renders_processes_tfjob_replicas_trainjob_nodes_and_vertex_pools(strategy):
    replicas, tfjob_replicas, nodes, pools = SHAPES[strategy]
    shape = ClusterShape.for_config(config(strategy, workers=3, parameter_servers=2))
    shape.validate(placement("tfjob"))
    shape.validate(placement("trainjob"))
    assert shape.replicas == replicas
    assert {role: len(hosts) for role, hosts in local_cluster(shape).spec.items()} == replicas
    plan = job.plan(config(strategy), "tfjob", job.LaunchOptions())
    body = tfjob.manifest(shape, plan, job.LaunchOptions(), "j", "ns")
    assert {k: v["replicas"] for k, v in body["spec"]["tfReplicaSpecs"].items()} == \
        tfjob_replicas
    body = trainjob.manifest(shape, plan, job.LaunchOptions(), "j", "ns")
    assert body["spec"]["trainer"]["numNodes"] == nodes
    assert vertex.pool_counts(shape) == pools


@pytest.mark.parametrize("shape,message", [
    (ClusterShape("parameter_server", chief=1, workers=2, ps=0),
     "needs 1 to 64 parameter servers"),
    (ClusterShape("parameter_server", chief=0, workers=2, ps=1), "needs a chief to coordinate"),
    (ClusterShape("multi_worker_mirrored", workers=0), "workers=0 for strategy"),
    (ClusterShape("parameter_server", chief=1, workers=0, ps=1), "workers=0 for strategy"),
    (ClusterShape("multi_worker_mirrored", workers=2, ps=1), "runs workers only"),
    (ClusterShape("mirrored", chief=1, workers=2), "trains in one process"),
    (ClusterShape("multi_worker_mirrored", workers=300), "allowed 1 to 256 tfjob workers"),
])
def test_shapes_a_strategy_cannot_run_are_rejected(shape, message):
    with pytest.raises(TrainConfigError, match=message):
        shape.validate(placement("tfjob"))


def test_a_cluster_launcher_allows_more_workers_than_one_machine():
    shape = ClusterShape("multi_worker_mirrored", workers=16)
    shape.validate(placement("tfjob"))
    with pytest.raises(TrainConfigError, match="allowed 1 to 8 local worker processes"):
        shape.validate(placement("local"))
    with pytest.raises(TrainConfigError, match="launcher 'slurm' is not known"):
        launchers.get("slurm")


@pytest.mark.parametrize("launcher,options,message", [
    ("local", {"namespace": "x"}, "launcher 'local' takes none"),
    ("tfjob", {"region": "eu"}, "['region'] are not known to launcher 'tfjob'; allowed:"),
    ("vertex", {"volume_claim": "c"}, "['volume_claim'] are not known to launcher 'vertex'"),
    ("tfjob", {"gpus": "one"}, "gpus='one' should be a int"),
    ("tfjob", {"deadline_seconds": 0}, "deadline_seconds must be positive"),
    ("vertex", {"gpu_type": "NVIDIA_TESLA_T4"}, "go together"),
    ("vertex", {"gpu_type": "nvidia.com/gpu", "gpus": 1},
     "gpu_type 'nvidia.com/gpu' is not a Vertex AI accelerator; allowed: NVIDIA_TESLA_K80, "),
    ("tfjob", {"volume_claim": "c", "mount_path": "rel"}, "must be an absolute path"),
    ("tfjob", {"runtime": "r"}, "['runtime'] are not known to launcher 'tfjob'"),
    ("trainjob", {"backoff_limit": 2}, "['backoff_limit'] are not known to launcher 'trainjob'"),
    ("trainjob", {"job_name": "Fit_1"}, "job_name 'Fit_1' must be at most 52 lower-case"),
    ("tfjob", {"job_name": "a" * 53}, "must be at most 52"),
    ("local", {"runtime": "r"}, "are for the cluster launchers (tfjob, trainjob, vertex)"),
])
def test_bad_launcher_options_are_named(launcher, options, message):
    with pytest.raises(TrainConfigError) as err:
        job.parse_options(launcher, options)
    assert message in str(err.value)


def test_options_from_kfp_json_numbers_are_accepted():
    parsed = job.parse_options("tfjob", {"gpus": 2.0, "poll_seconds": 1, "cpu": "4"})
    assert (parsed.gpus, parsed.poll_seconds, parsed.cpu) == (2, 1.0, "4")


def test_the_plan_maps_kfp_gcs_paths_and_stages_what_replicas_cannot_reach(tmp_path):
    kfp_paths = TrainConfig(dataset="/gcs/b/run/merge/dataset", model_dir="/gcs/b/run/train/model",
                            tensorboard_dir="/gcs/b/run/train/tensorboard")
    plan = job.plan(kfp_paths, "vertex", job.LaunchOptions())
    assert plan.job_dir == "gs://b/run/train/model-job"
    assert plan.config.dataset == "gs://b/run/merge/dataset"
    assert plan.config.model_dir == "gs://b/run/train/model"
    assert plan.config.checkpoint_dir == "gs://b/run/train/model-job/checkpoints"
    assert not plan.copy_in and not plan.copy_out

    local = TrainConfig(dataset=str(tmp_path / "data"), model_dir=str(tmp_path / "model"))
    with pytest.raises(TrainConfigError, match="on this machine's disk only"):
        job.plan(local, "tfjob", job.LaunchOptions())
    plan = job.plan(local, "tfjob", job.LaunchOptions(job_dir="gs://b/jobs/1"))
    assert plan.copy_in == {str(tmp_path / "data"): "gs://b/jobs/1/data"}
    assert plan.copy_out == {"gs://b/jobs/1/model": str(tmp_path / "model")}
    with pytest.raises(TrainConfigError, match="job_dir .* is not on storage every vertex"):
        job.plan(local, "vertex", job.LaunchOptions(job_dir=str(tmp_path)))
    with pytest.raises(TrainConfigError, match="needs a gs:// job_dir"):
        job.plan(local, "vertex", job.LaunchOptions(job_dir="s3://b/j"))


def test_the_messages_name_every_store_the_replicas_reach(tmp_path):
    local = TrainConfig(dataset=str(tmp_path / "data"), model_dir=str(tmp_path / "model"),
                        checkpoint_dir=str(tmp_path / "checkpoints"))
    with pytest.raises(TrainConfigError) as err:
        job.plan(local, "tfjob", job.LaunchOptions())
    assert "a gs://, minio:// or s3:// URI, a KFP path under /gcs/, /minio/ or /s3/" in str(
        err.value) and "pipeline root on gs://, minio:// or s3://" in str(err.value)
    with pytest.raises(TrainConfigError, match="checkpoint_dir .* use a gs://, minio:// or "
                                               "s3:// URI, a KFP path under /gcs/, /minio/"):
        job.plan(local, "trainjob", job.LaunchOptions(job_dir="s3://b/jobs/1"))
    with pytest.raises(TrainConfigError, match=r"\(a gs:// URI or a KFP path under /gcs/\)"):
        job.plan(local, "vertex", job.LaunchOptions())


def test_the_tfjob_retries_preemptions_not_user_errors_and_runs_as_the_suite():
    shape = ClusterShape("parameter_server", chief=1, workers=2, ps=1)
    options = job.parse_options("tfjob", {"gpus": 1, "volume_claim": "shared",
                                          "deadline_seconds": 600, "backoff_limit": 2})
    plan = job.plan(config("parameter_server"), "tfjob", options)
    body = tfjob.manifest(shape, plan, options, "train-1", "team")
    assert body["metadata"] == {"name": "train-1", "namespace": "team", "labels": {
        "app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "train"}}
    assert body["spec"]["runPolicy"]["activeDeadlineSeconds"] == 600
    assert body["spec"]["runPolicy"]["backoffLimit"] == 2
    for kind, spec in body["spec"]["tfReplicaSpecs"].items():
        assert spec["restartPolicy"] == "ExitCode"
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert container["name"] == "tensorflow" and container["image"] == IMAGE
        assert container["command"][-2:] == ["gs://b/run/train/model-job/config.json",
                                             "gs://b/run/train/model-job/result.json"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["serviceAccountName"] == "tfkfp-replica"
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["securityContext"] == {"allowPrivilegeEscalation": False,
                                                "capabilities": {"drop": ["ALL"]}}
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "shared"
        gpus = container["resources"]["limits"].get("nvidia.com/gpu")
        assert gpus == (None if kind == "PS" else 1)


def test_the_vertex_request_puts_chief_workers_and_ps_in_pools_0_1_2():
    shape = ClusterShape("parameter_server", chief=1, workers=3, ps=2)
    options = job.parse_options("vertex", {
        "project": "p", "region": "europe-west4", "machine_type": "n1-highmem-8",
        "gpu_type": "NVIDIA_TESLA_T4", "gpus": 1,
        "image": "europe-docker.pkg.dev/p/r/tfkfp:1", "deadline_seconds": 7200,
        "service_account": "trainer@p.iam.gserviceaccount.com"})
    plan = job.plan(config("parameter_server"), "vertex", options)
    request = vertex.request(shape, plan, options, options.project, "run-1")
    body = type(request).to_dict(request)
    assert body["parent"] == "projects/p/locations/europe-west4"
    spec = body["custom_job"]["job_spec"]
    pools = spec["worker_pool_specs"]
    assert [p["replica_count"] for p in pools] == ["1", "3", "2"]
    assert [p["machine_spec"]["accelerator_count"] for p in pools] == [1, 1, 0]
    assert {p["container_spec"]["image_uri"] for p in pools} == {options.image}
    assert pools[0]["container_spec"]["command"][:3] == ["python", "-m",
                                                         "tfkfp.components.train.worker"]
    assert spec["base_output_directory"]["output_uri_prefix"] == plan.job_dir
    assert spec["scheduling"]["timeout"] == "7200s"
    assert spec["service_account"] == options.service_account
    assert body["custom_job"]["display_name"] == "run-1"


class FakeJobService:
    """Vertex AI's JobServiceClient as far as the launcher uses it: states in order, then
    JOB_STATE_CANCELLED once a cancel was asked for. A state "interrupt" raises
    KeyboardInterrupt, "sigterm" sends this process SIGTERM (what KFP does to a cancelled
    step) and reports the job running."""

    def __init__(self, states, error=""):
        from google.cloud import aiplatform_v1 as v1

        self.v1, self.states, self.error = v1, list(states), error
        self.created, self.cancelled = None, []

    def create_custom_job(self, request):
        self.created = request
        return self.v1.CustomJob(name="projects/p/locations/europe-west4/customJobs/7")

    def get_custom_job(self, name):
        state = "JOB_STATE_CANCELLED" if self.cancelled else self.states.pop(0)
        if state == "interrupt":
            raise KeyboardInterrupt
        if state == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            state = "JOB_STATE_RUNNING"
        return self.v1.CustomJob(name=name, state=state, error={"message": self.error})

    def cancel_custom_job(self, name):
        self.cancelled.append(name)


JOB_NAME = "projects/p/locations/europe-west4/customJobs/7"
GCP_RESOURCES = {"resources": [{
    "resourceType": "CustomJob",
    "resourceUri": f"https://europe-west4-aiplatform.googleapis.com/v1/{JOB_NAME}"}]}


def test_the_vertex_launcher_waits_fails_with_the_error_and_cancels_when_stopped(tmp_path):
    shape = ClusterShape("default", chief=1)
    options = job.parse_options("vertex", {"project": "p", "poll_seconds": 0.01})
    plan = job.plan(config(), "vertex", options)
    ok = FakeJobService(["JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
    resources = tmp_path / "outputs" / "gcp_resources"
    vertex.run(shape, plan, options, client=ok, gcp_resources=str(resources))
    assert ok.created.custom_job.job_spec.worker_pool_specs[0].replica_count == 1
    assert not ok.cancelled
    assert json.loads(resources.read_text()) == GCP_RESOURCES

    failed = FakeJobService(["JOB_STATE_RUNNING", "JOB_STATE_FAILED"], error="OOM in chief")
    with pytest.raises(VertexJobFailed, match="ended JOB_STATE_FAILED: OOM in chief"):
        vertex.run(shape, plan, options, client=failed)
    assert not failed.cancelled

    stopped = FakeJobService(["JOB_STATE_RUNNING", "interrupt"])
    with pytest.raises(KeyboardInterrupt):
        vertex.run(shape, plan, options, client=stopped)
    assert stopped.cancelled == [JOB_NAME]


def test_sigterm_cancels_the_custom_job_and_names_it_in_gcp_resources(tmp_path):
    shape = ClusterShape("default", chief=1)
    options = job.parse_options("vertex", {"project": "p", "poll_seconds": 0.01})
    plan = job.plan(config(), "vertex", options)
    service = FakeJobService(["JOB_STATE_PENDING", "sigterm", "JOB_STATE_RUNNING"])
    resources = tmp_path / "gcp_resources"
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        vertex.run(shape, plan, options, client=service, gcp_resources=str(resources))
    assert str(stopped.value) == (f"training stopped by signal {int(signal.SIGTERM)}: cancelled "
                                  f"Vertex AI CustomJob {JOB_NAME} (now JOB_STATE_CANCELLED)")
    assert service.cancelled == [JOB_NAME]
    assert json.loads(resources.read_text()) == GCP_RESOURCES
    assert signal.getsignal(signal.SIGTERM) is previous


def test_a_refused_cancel_does_not_hide_why_the_step_stopped():
    class Refusing(FakeJobService):
        def cancel_custom_job(self, name):
            raise RuntimeError("400 FailedPrecondition: the job has ended")

    shape = ClusterShape("default", chief=1)
    options = job.parse_options("vertex", {"project": "p", "poll_seconds": 0.01})
    plan = job.plan(config(), "vertex", options)
    with pytest.raises(SystemExit, match=r"stopped by signal \d+: cancelled .*\(now unknown"):
        vertex.run(shape, plan, options, client=Refusing(["sigterm"]))


def test_train_checks_the_launcher_before_any_work(demo_dataset, tmp_path):
    with pytest.raises(TrainConfigError, match="launcher 'k8s' is not known"):
        train(demo_dataset, str(tmp_path / "model"), launcher="k8s")
    with pytest.raises(TrainConfigError, match="on this machine's disk only"):
        train(demo_dataset, str(tmp_path / "model"), launcher="tfjob")
    with pytest.raises(TrainConfigError, match="cannot run as a TFJob"):
        train(demo_dataset, str(tmp_path / "model"), launcher="tfjob", strategy="tpu",
              launcher_options={"job_dir": "gs://b/j"})
    with pytest.raises(TrainConfigError, match="cannot run as a TrainJob"):
        train(demo_dataset, str(tmp_path / "model"), launcher="trainjob", strategy="tpu",
              launcher_options={"job_dir": "gs://b/j"})
    with pytest.raises(TrainConfigError, match="allowed 1 to 256 trainjob workers"):
        train(demo_dataset, str(tmp_path / "model"), launcher="trainjob", workers=257,
              strategy="multi_worker_mirrored", launcher_options={"job_dir": "gs://b/j"})
    assert not os.listdir(tmp_path)


def test_a_staged_job_plan_round_trips_through_the_worker_files(tmp_path):
    """stage writes what the replicas read; collect copies back what the chief wrote."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").write_text("{}")
    shared = tmp_path / "shared"
    local = TrainConfig(dataset=str(tmp_path / "data"), model_dir=str(tmp_path / "model"))
    options = job.parse_options("tfjob", {"volume_claim": "c", "mount_path": str(shared),
                                          "job_dir": str(shared / "job")})
    plan = job.plan(local, "tfjob", options)
    job.stage(plan)
    assert (shared / "job" / "data" / "manifest.json").exists()
    assert TrainConfig.from_json((shared / "job" / "config.json").read_text()) == plan.config
    with pytest.raises(RuntimeError, match="wrote no result"):
        job.collect(plan)
    (shared / "job" / "model").mkdir()
    (shared / "job" / "model" / "saved_model.pb").write_text("pb")
    (shared / "job" / "result.json").write_text(json.dumps({"eval_accuracy": 0.9}))
    assert job.collect(plan) == {"eval_accuracy": 0.9}
    assert (tmp_path / "model" / "saved_model.pb").read_text() == "pb"


class _FakePods:
    """CoreV1Api's two calls the log follower makes: list the job's pods, stream a log."""

    def __init__(self, pods, logs):
        self.pods, self.logs, self.streamed = pods, logs, []

    def list_namespaced_pod(self, namespace, label_selector):
        from types import SimpleNamespace as NS

        assert label_selector == f"{tfjob.JOB_LABEL}=digits"
        return NS(items=[NS(metadata=NS(name=name, uid=name, labels={
            "training.kubeflow.org/replica-type": kind,
            "training.kubeflow.org/replica-index": "0"}), status=NS(phase=phase))
            for name, kind, phase in self.pods])

    def read_namespaced_pod_log(self, pod, namespace, container, follow, _preload_content):
        from types import SimpleNamespace as NS

        assert container == "tensorflow" and follow
        self.streamed.append(pod)
        return NS(stream=lambda: iter(self.logs[pod]))


def test_pod_logs_are_streamed_once_per_started_pod_with_the_replica_as_prefix(capsys):
    import time

    core = _FakePods([("digits-chief-0", "chief", "Running"),
                      ("digits-worker-0", "worker", "Pending")],
                     {"digits-chief-0": [b"epoch 1\nepoch 2\n", b"done\n"]})
    logs = kube.PodLogs(core, "team", f"{tfjob.JOB_LABEL}=digits", tfjob.CONTAINER,
                        tfjob.replica_of)
    logs.follow_new_pods()
    logs.follow_new_pods()  # the same pod again: not streamed twice
    deadline = time.monotonic() + 10
    while len(logs.lines) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert core.streamed == ["digits-chief-0"]  # the pending worker waits until it starts
    assert "[chief-0] epoch 1\n[chief-0] epoch 2\n[chief-0] done\n" in capsys.readouterr().out
    assert logs.tail().endswith("  [chief-0] epoch 1\n  [chief-0] epoch 2\n  [chief-0] done")


def test_the_tfjob_client_reads_kubeconfig_as_set_when_it_connects(tmp_path, monkeypatch):
    import kubernetes.config  # noqa: F401 - imported first, as in a long-lived process

    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://10.1.2.3:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert kube.api_client().configuration.host == "https://10.1.2.3:6443"
