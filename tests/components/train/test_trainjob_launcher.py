"""The trainjob launcher against a real kube-apiserver with Kubeflow Trainer v2's TrainJob and
ClusterTrainingRuntime resources and JobSet's resource registered, and the suite's runtime
(manifests/trainer) applied. No Trainer controller runs here, so each test plays its part: it
reads the TrainJob the launcher created, creates the JobSet Trainer would build from the
runtime, runs the chief pod's real command with the environment the runtime gives it, and
writes the TrainJob's status."""

import copy
import datetime
import functools
import json
import os
import subprocess
import sys

import pytest
import upstream_schemas
import yaml
from cluster_tools import ROOT, run, tool
from kube_controller import (
    Controller,
    LauncherContract,
    cluster_with,
    job_options,
    past_its_deadline,
)

from tfkfp.components._image import IMAGE
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.train.core import train
from tfkfp.components.train.errors import TrainJobFailed
from tfkfp.components.train.launchers import kube, trainjob

pytestmark = pytest.mark.slow
NAMESPACE = "team"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory):
    work = tmp_path_factory.mktemp("resources")
    runtime = work / "runtime.yaml"
    runtime.write_text(run([tool("kubectl"), "kustomize", ROOT / "manifests" / "trainer"]).stdout)
    # The namespace's allow-list: the defaults and the account one test picks.
    allowlist = work / "allowlist.yaml"
    allowlist.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": kube.ALLOWLIST, "namespace": NAMESPACE},
        "data": {"replicaImages": f"{IMAGE}\n",
                 "replicaServiceAccounts": f"{kube.DEFAULT_SERVICE_ACCOUNT}\ntrainer-sa\n"}}))
    with cluster_with(tmp_path_factory, NAMESPACE, upstream_schemas.TRAINER,
                      [runtime, allowlist]) as path:
        yield path


class Trainer(Controller):
    """Kubeflow Trainer's part, for a runtime without an ML policy of its own."""

    namespace, resource_module = NAMESPACE, trainjob

    def set_condition(self, name, kind, reason, message):
        """Conditions are metav1.Conditions, one per type."""
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = [c for c in (self.job(name).get("status") or {}).get("conditions") or []
                      if c["type"] != kind]
        conditions.append({"type": kind, "status": "True", "reason": reason,
                           "message": message, "lastTransitionTime": now})
        self.replace_status(name, {"conditions": conditions})

    def create_jobset(self, job):
        """The JobSet Trainer builds: the runtime's template, its trainer job sized to
        numNodes and running the TrainJob's image, command and resources, the TrainJob's
        runtime patches applied. The API server checks it against JobSet's schema."""
        runtime = self.objects.get_cluster_custom_object(
            trainjob.GROUP, trainjob.VERSION, "clustertrainingruntimes",
            job["spec"]["runtimeRef"]["name"])
        spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
        trainer = job["spec"]["trainer"]
        for rjob in spec["replicatedJobs"]:
            if rjob["template"]["metadata"]["labels"].get(ANCESTOR) == "trainer":
                rjob["replicas"] = 1
                rjob["template"]["spec"].update(parallelism=trainer["numNodes"],
                                                completions=trainer["numNodes"])
                node = container(rjob)
                node.update(image=trainer["image"], command=trainer["command"])
                for kind, values in trainer["resourcesPerNode"].items():
                    node["resources"][kind].update(values)
        for patch in job["spec"].get("runtimePatches", []):
            for change in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
                (rjob,) = [r for r in spec["replicatedJobs"] if r["name"] == change["name"]]
                patch_pod(rjob, change["template"]["spec"]["template"]["spec"])
        body = {"apiVersion": "/".join(JOBSET[:2]), "kind": "JobSet",
                "metadata": {"name": job["metadata"]["name"], "namespace": NAMESPACE},
                "spec": spec}
        return self.objects.create_namespaced_custom_object(*JOBSET[:2], NAMESPACE, JOBSET[2],
                                                            body)

    def run_pod(self, jobset, rjob_name, index):
        """Pod ``index`` of a replicated job, as its container would run: its command, with
        the variables the runtime declares (downward API read from the labels JobSet gives
        the pod) and the completion index the Job controller sets."""
        (rjob,) = [r for r in jobset["spec"]["replicatedJobs"] if r["name"] == rjob_name]
        labels = {"jobset.sigs.k8s.io/jobset-name": jobset["metadata"]["name"],
                  "jobset.sigs.k8s.io/replicatedjob-name": rjob_name,
                  "jobset.sigs.k8s.io/job-index": "0"}
        env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        node = container(rjob)
        for variable in node["env"]:
            if "value" in variable:
                env[variable["name"]] = variable["value"]
            else:
                path = variable["valueFrom"]["fieldRef"]["fieldPath"]
                env[variable["name"]] = labels[path.split("'")[1]]
        env["JOB_COMPLETION_INDEX"] = str(index)
        # The pod's image has its own python; here it is this interpreter.
        return subprocess.run([sys.executable, *node["command"][1:]], env=env, timeout=300,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def container(rjob):
    (node,) = [c for c in rjob["template"]["spec"]["template"]["spec"]["containers"]
               if c["name"] == trainjob.NODE]
    return node


def patch_pod(rjob, patch):
    pod = rjob["template"]["spec"]["template"]["spec"]
    if "serviceAccountName" in patch:
        pod["serviceAccountName"] = patch["serviceAccountName"]
    pod["volumes"] = pod.get("volumes", []) + patch.get("volumes", [])
    for change in patch.get("containers", []):
        (target,) = [c for c in pod["containers"] if c["name"] == change["name"]]
        target["volumeMounts"] = target.get("volumeMounts", []) + change["volumeMounts"]


options = functools.partial(job_options, NAMESPACE)


def test_a_trainjob_that_succeeds_trains_and_returns_the_model(kubeconfig, demo_dataset,
                                                               tmp_path):
    trainer = Trainer(kubeconfig)
    seen = {}

    def run_the_chief(job):
        name = job["metadata"]["name"]
        seen["job"], seen["jobset"] = job, trainer.create_jobset(job)
        seen["pod"] = trainer.run_pod(seen["jobset"], trainjob.NODE, 0)
        print(seen["pod"].stdout[-3000:])
        if seen["pod"].returncode == 0:
            trainer.set_condition(name, "Complete", "AllJobsCompleted",
                                  "jobset completed successfully")
        else:
            trainer.set_condition(name, "Failed", "FailedJobs", "the chief failed")

    check = trainer.play("digits", run_the_chief)
    result = train(demo_dataset, str(tmp_path / "model"), epochs=2, batch_size=32,
                   launcher="trainjob",
                   launcher_options=options(tmp_path, "digits", cpu="1", memory="2Gi"))
    check()
    assert result.figures["eval_accuracy"] > 0.8
    assert os.path.exists(tmp_path / "model" / "saved_model.pb")  # copied back from the job
    tf_config = {"cluster": {"chief": ["digits-node-0-0.digits:2222"]},
                 "task": {"type": "chief", "index": 0}}
    assert f"TF_CONFIG from the JobSet identity: {json.dumps(tf_config)}" in seen["pod"].stdout
    spec = seen["job"]["spec"]  # as stored: nothing the launcher wrote was dropped
    assert spec["runtimeRef"]["name"] == "tfkfp-tensorflow"
    assert spec["trainer"]["numNodes"] == 1 and spec["activeDeadlineSeconds"] == 86400
    assert spec["trainer"]["resourcesPerNode"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert spec["runtimePatches"][0]["manager"] == trainjob.PATCH_MANAGER
    (rjob,) = seen["jobset"]["spec"]["replicatedJobs"]
    assert container(rjob)["volumeMounts"][-1]["mountPath"] == str(tmp_path / "shared")
    assert trainer.job("digits")["status"]["conditions"][-1]["type"] == "Complete"  # kept


def test_a_failed_trainjob_fails_the_step_with_its_reason_and_is_kept(kubeconfig,
                                                                      demo_dataset, tmp_path):
    trainer = Trainer(kubeconfig)
    jobsets = []

    def fail(job):
        jobsets.append(trainer.create_jobset(job))
        trainer.set_condition("broken", "Failed", "FailedJobs",
                              "jobset failed due to one or more job failures")

    check = trainer.play("broken", fail)
    with pytest.raises(TrainJobFailed, match=r"TrainJob team/broken failed: FailedJobs: "
                                             r"jobset failed due to one or more job failures"):
        train(demo_dataset, str(tmp_path / "model"), strategy="parameter_server", workers=3,
              parameter_servers=2, launcher="trainjob",
              launcher_options=options(tmp_path, "broken", service_account="trainer-sa"))
    check()
    assert trainer.job("broken")["spec"]["trainer"]["numNodes"] == 6  # chief, 3 workers, 2 ps
    (rjob,) = jobsets[0]["spec"]["replicatedJobs"]
    assert rjob["template"]["spec"]["completions"] == 6
    assert rjob["template"]["spec"]["template"]["spec"]["serviceAccountName"] == "trainer-sa"
    assert not os.path.exists(tmp_path / "model")


def test_a_trainjob_past_its_deadline_is_deleted_and_fails_the_step(kubeconfig, demo_dataset,
                                                                    tmp_path, monkeypatch):
    monkeypatch.setattr(kube, "DEADLINE_GRACE_SECONDS", 0)
    deadlines = []
    past_its_deadline(Trainer(kubeconfig), "trainjob", demo_dataset, tmp_path,
                      lambda job: deadlines.append(job["spec"]["activeDeadlineSeconds"]),
                      TrainJobFailed, "TrainJob team/slow passed its deadline of 2 s")
    assert deadlines == [2]  # Trainer enforces it first, with reason DeadlineExceeded


def test_a_service_account_outside_the_allow_list_is_refused_before_the_trainjob(
        kubeconfig, demo_dataset, tmp_path):
    trainer = Trainer(kubeconfig)
    with pytest.raises(TrainConfigError, match=(
            r"launcher_options service_account 'tfkfp-runner' is not allowed in namespace "
            r"'team'; allowed: tfkfp-replica, trainer-sa \(ConfigMap tfkfp-config, key "
            r"replicaServiceAccounts")):
        train(demo_dataset, str(tmp_path / "model"), launcher="trainjob",
              launcher_options=options(tmp_path, "runner", service_account="tfkfp-runner"))
    assert not trainer.exists("runner")
    assert not os.path.exists(tmp_path / "shared" / "runner")  # nothing staged either


class TestTrainJobLauncher(LauncherContract):
    controller, launcher, error = Trainer, "trainjob", TrainJobFailed
    missing_namespace = (r"could not create TrainJob nowhere/lost: 404 Not Found: "
                         r"namespaces \"nowhere\" not found\. Is Kubeflow Trainer v2 installed")
