"""The tfjob launcher against a real kube-apiserver with the TFJob resource registered. No
Training Operator runs here, so each test plays its part: it reads the job the launcher
created and writes the job's status (and, for success, runs the chief's command the way the
operator's pod would)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import kube_apiserver
import pytest
from cluster_tools import run as run_tool
from cluster_tools import tool

from tfkfp.components.train.core import train
from tfkfp.components.train.errors import TFJobFailed
from tfkfp.components.train.launchers import tfjob

pytestmark = pytest.mark.slow
HERE = os.path.dirname(__file__)
NAMESPACE = "team"


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory):
    with kube_apiserver.running(tmp_path_factory.mktemp("apiserver")) as path:
        kubectl = [tool("kubectl"), "--kubeconfig", path]
        run_tool([*kubectl, "create", "namespace", NAMESPACE])
        run_tool([*kubectl, "apply", "-f", os.path.join(HERE, "tfjob-crd.yaml")])
        run_tool([*kubectl, "wait", "--for=condition=established", "--timeout=60s",
                  "crd/tfjobs.kubeflow.org"])
        previous = os.environ.get("KUBECONFIG")
        os.environ["KUBECONFIG"] = str(path)
        try:
            yield str(path)
        finally:
            if previous is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = previous


class Operator:
    """The Training Operator's part: find the job, write its status conditions."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config

        self.jobs = client.CustomObjectsApi(config.new_client_from_config(kubeconfig))

    def job(self, name):
        return self.jobs.get_namespaced_custom_object(tfjob.GROUP, tfjob.VERSION, NAMESPACE,
                                                      tfjob.PLURAL, name)

    def wait_for(self, name, timeout=120):
        from kubernetes import client

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return self.job(name)
            except client.ApiException as err:
                if err.status != 404:
                    raise
            time.sleep(0.2)
        raise AssertionError(f"TFJob {name} was never created")

    def exists(self, name):
        from kubernetes import client

        try:
            self.job(name)
            return True
        except client.ApiException as err:
            if err.status == 404:
                return False
            raise

    def set_condition(self, name, kind, reason="", message=""):
        body = self.job(name)
        conditions = (body.get("status") or {}).get("conditions") or []
        condition = {"type": kind, "status": "True", "reason": reason or kind}
        if message:  # the client sends an empty string as null, which the schema rejects
            condition["message"] = message
        conditions.append(condition)
        body["status"] = {"conditions": conditions}
        self.jobs.replace_namespaced_custom_object_status(
            tfjob.GROUP, tfjob.VERSION, NAMESPACE, tfjob.PLURAL, name, body)

    def play(self, name, act):
        """Run ``act(job)`` in a thread once the job exists; re-raise its failure later."""
        errors = []

        def target():
            try:
                act(self.wait_for(name))
            except BaseException as err:  # noqa: BLE001 - reported by check()
                traceback.print_exc()  # the launcher may still be waiting: show it now
                errors.append(err)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()

        def check():
            thread.join(timeout=300)
            if errors:
                raise errors[0]

        return check


def options(tmp_path, name, **more):
    shared = tmp_path / "shared"
    return {"namespace": NAMESPACE, "job_name": name, "volume_claim": "shared-data",
            "mount_path": str(shared), "job_dir": str(shared / name), "poll_seconds": 0.2,
            **more}


def test_a_tfjob_that_succeeds_trains_and_returns_the_model(kubeconfig, demo_dataset,
                                                            tmp_path):
    operator = Operator(kubeconfig)

    def run_the_chief(job):
        operator.set_condition(job["metadata"]["name"], "Created")
        chief = job["spec"]["tfReplicaSpecs"]["Chief"]
        (container,) = chief["template"]["spec"]["containers"]
        operator.set_condition(job["metadata"]["name"], "Running")
        # The pod's image has its own python; here it is this interpreter.
        command = [sys.executable, *container["command"][1:]]
        tf_config = {"cluster": {"chief": ["127.0.0.1:2222"]},
                     "task": {"type": "chief", "index": 0}}
        done = subprocess.run(command, env={**os.environ, "TF_CONFIG": json.dumps(tf_config)},
                              timeout=300)
        kind = "Succeeded" if done.returncode == 0 else "Failed"
        operator.set_condition(job["metadata"]["name"], kind, message=f"exit {done.returncode}")

    check = operator.play("digits", run_the_chief)
    result = train(demo_dataset, str(tmp_path / "model"), epochs=2, batch_size=32,
                   launcher="tfjob", launcher_options=options(tmp_path, "digits"))
    check()
    assert result.figures["eval_accuracy"] > 0.8
    assert os.path.exists(tmp_path / "model" / "saved_model.pb")  # copied back from the job
    job = operator.job("digits")
    assert job["status"]["conditions"][-1]["type"] == "Succeeded"  # kept for the operator
    assert job["spec"]["tfReplicaSpecs"]["Chief"]["restartPolicy"] == "ExitCode"
    checkpoints = tmp_path / "shared" / "digits" / "checkpoints"
    assert any(f.endswith(".index") for f in os.listdir(checkpoints))


def test_a_failed_tfjob_fails_the_step_with_its_reason_and_is_kept(kubeconfig, demo_dataset,
                                                                   tmp_path):
    operator = Operator(kubeconfig)
    check = operator.play("broken", lambda job: operator.set_condition(
        "broken", "Failed", "TFJobFailed",
        "TFJob team/broken has failed because 1 Worker replica(s) failed."))
    with pytest.raises(TFJobFailed, match=r"TFJob team/broken failed: TFJobFailed: "
                                                r"TFJob team/broken has failed because 1 "
                                                r"Worker replica\(s\) failed"):
        train(demo_dataset, str(tmp_path / "model"), strategy="multi_worker_mirrored",
              workers=3, launcher="tfjob", launcher_options=options(tmp_path, "broken"))
    check()
    assert operator.job("broken")["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    assert not os.path.exists(tmp_path / "model")


def test_a_tfjob_past_its_deadline_is_deleted_and_fails_the_step(kubeconfig, demo_dataset,
                                                                 tmp_path, monkeypatch):
    monkeypatch.setattr(tfjob, "DEADLINE_GRACE_SECONDS", 0)
    operator = Operator(kubeconfig)
    check = operator.play("slow", lambda job: operator.set_condition("slow", "Running"))
    with pytest.raises(TFJobFailed, match="passed its deadline of 2 s"):
        train(demo_dataset, str(tmp_path / "model"), launcher="tfjob",
              launcher_options=options(tmp_path, "slow", deadline_seconds=2))
    check()
    assert not operator.exists("slow")


def test_cancelling_the_step_deletes_the_tfjob(kubeconfig, demo_dataset, tmp_path):
    operator = Operator(kubeconfig)
    script = ("import sys, json\n"
              "from tfkfp.components.train.core import train\n"
              "train(sys.argv[1], sys.argv[2], launcher='tfjob', "
              "launcher_options=json.loads(sys.argv[3]))\n")
    step = subprocess.Popen([sys.executable, "-c", script, demo_dataset,
                             str(tmp_path / "model"), json.dumps(options(tmp_path, "cancel"))],
                            env={**os.environ, "KUBECONFIG": kubeconfig},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        operator.wait_for("cancel")
        step.send_signal(signal.SIGTERM)  # what KFP does to a cancelled step's pod
        out, _ = step.communicate(timeout=60)
    finally:
        step.kill()
    assert step.returncode != 0
    assert "stopped by signal" in out, out[-3000:]
    assert not operator.exists("cancel")


def test_a_tfjob_that_cannot_be_created_says_why(kubeconfig, demo_dataset, tmp_path):
    with pytest.raises(TFJobFailed, match=r"could not create TFJob nowhere/lost: 404 "
                                                r"Not Found: namespaces \"nowhere\" not found"):
        train(demo_dataset, str(tmp_path / "model"), launcher="tfjob",
              launcher_options={**options(tmp_path, "lost"), "namespace": "nowhere"})
