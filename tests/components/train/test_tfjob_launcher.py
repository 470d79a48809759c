"""The tfjob launcher against a real kube-apiserver with the TFJob resource registered. No
Training Operator runs here, so each test plays its part: it reads the job the launcher
created and writes the job's status (and, for success, runs the chief's command the way the
operator's pod would)."""

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
    job_options,
    kubeconfig_fixture,
    past_its_deadline,
)

from tfkfp.components._image import IMAGE
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.train.core import train
from tfkfp.components.train.errors import TFJobFailed
from tfkfp.components.train.launchers import job, kube, tfjob

pytestmark = pytest.mark.slow
NAMESPACE = "team"


kubeconfig = kubeconfig_fixture(NAMESPACE, [upstream_schemas.TFJOB])


class Operator(Controller):
    """The Training Operator's part: find the job, append its status conditions."""

    namespace, resource_module = NAMESPACE, tfjob

    def set_condition(self, name, kind, reason="", message=""):
        conditions = (self.job(name).get("status") or {}).get("conditions") or []
        condition = {"type": kind, "status": "True", "reason": reason or kind}
        if message:  # the client sends an empty string as null, which the schema rejects
            condition["message"] = message
        self.replace_status(name, {"conditions": [*conditions, condition]})


options = functools.partial(job_options, NAMESPACE)


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
    monkeypatch.setattr(kube, "DEADLINE_GRACE_SECONDS", 0)
    operator = Operator(kubeconfig)
    past_its_deadline(operator, "tfjob", demo_dataset, tmp_path,
                      lambda job: operator.set_condition("slow", "Running"),
                      TFJobFailed, "passed its deadline of 2 s")


def test_without_an_allow_list_only_the_default_image_and_account_are_allowed(
        kubeconfig, demo_dataset, tmp_path):
    operator = Operator(kubeconfig)
    for field, value in (("image", "evil/miner:1"), ("service_account", "tfkfp-runner")):
        with pytest.raises(TrainConfigError, match=(
                rf"launcher_options {field} '{value}' is not allowed in namespace 'team'; "
                rf"allowed: ({IMAGE}|tfkfp-replica) \(ConfigMap tfkfp-config")):
            train(demo_dataset, str(tmp_path / "model"), launcher="tfjob",
                  launcher_options=options(tmp_path, "refused", **{field: value}))
        assert not operator.exists("refused")


def test_the_allow_list_configmap_names_what_replicas_may_run(kubeconfig, demo_dataset,
                                                              tmp_path):
    """The base's ConfigMap, applied as shipped: its image and account pass the check and
    are what the TFJob's pods run; anything else is refused before a TFJob exists."""
    kubectl = [tool("kubectl"), "--kubeconfig", kubeconfig]
    rendered = run([tool("kubectl"), "kustomize", ROOT / "manifests" / "base"]).stdout
    (config_map,) = [d for d in yaml.safe_load_all(rendered)
                     if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == kube.ALLOWLIST]
    config_map["metadata"]["namespace"] = "listed"
    config_map["data"]["replicaImages"] += "registry.example/tfkfp:0.1.0\n"
    path = tmp_path / "allowlist.yaml"
    path.write_text(yaml.safe_dump(config_map))
    run([*kubectl, "create", "namespace", "listed"])
    run([*kubectl, "apply", "-f", path])
    listed = {**options(tmp_path, "listed"), "namespace": "listed"}
    own = job.parse_options("tfjob", {**listed, "image": "registry.example/tfkfp:0.1.0"})
    kube.check_allowed(own)  # raises if refused
    with pytest.raises(TrainConfigError, match=(
            r"launcher_options image 'registry.example/tfkfp:0.2' is not allowed in namespace "
            rf"'listed'; allowed: {IMAGE}, registry.example/tfkfp:0.1.0 \(ConfigMap "
            r"tfkfp-config, key replicaImages")):
        train(demo_dataset, str(tmp_path / "model"), launcher="tfjob",
              launcher_options={**listed, "image": "registry.example/tfkfp:0.2"})
    operator = Operator(kubeconfig)
    operator.namespace = "listed"
    assert not operator.exists("listed")


class TestTFJobLauncher(LauncherContract):
    controller, launcher, error = Operator, "tfjob", TFJobFailed
    missing_namespace = (r"could not create TFJob nowhere/lost: 404 Not Found: namespaces "
                         r"\"nowhere\" not found")
