"""The katib engine against a real kube-apiserver with Katib 0.19's Experiment resource
registered (tests/upstream_crds). No Katib controller runs here, so the test plays its part:
it reads the Experiment the step created, runs each trial's real command with the values
Katib would substitute, reads the ``name=value`` lines as Katib's StdOut collector does,
early-stops one trial, and writes the Experiment's status with its optimal trial."""

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import upstream_schemas
from cluster_tools import run, tool
from kube_controller import Controller, cluster
from saved_weights import saved_weights

from tfkfp.components.tune import katib_experiment as kx
from tfkfp.components.tune.core import tune
from tfkfp.components.tune.errors import TuneError
from tfkfp.components.tune.katib_run import INJECTION_LABEL

pytestmark = pytest.mark.slow
NAMESPACE, UNLABELLED = "team", "plain"
EXPERIMENT = "experiments.kubeflow.org"
SPACE = {"learning_rate": {"type": "categorical", "choices": [1e-6, 0.05]}}
TINY = {"epochs": 2, "hidden_units": "16"}
# Katib's default StdOut filter (pkg/metricscollector/v1beta1/common/const.go)
KATIB_FILTER = re.compile(r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)")


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory):
    work = tmp_path_factory.mktemp("apiserver")
    crds = upstream_schemas.write([EXPERIMENT, *upstream_schemas.TRAINER], work / "crds")
    with cluster(work, NAMESPACE, crds) as path:
        kubectl = [tool("kubectl"), "--kubeconfig", path]
        run([*kubectl, "label", "namespace", NAMESPACE, f"{INJECTION_LABEL}=enabled"])
        run([*kubectl, "create", "namespace", UNLABELLED])
        yield path


@pytest.fixture
def shared(demo_dataset, tmp_path):
    """A folder every trial reaches (a mounted claim), holding the Dataset."""
    folder = tmp_path / "shared"
    shutil.copytree(demo_dataset, folder / "data")
    return folder


def engine_options(shared, name, **more):
    return {"namespace": NAMESPACE, "experiment_name": name, "volume_claim": "shared",
            "mount_path": str(shared), "poll_seconds": 0.2, **more}


class Katib(Controller):
    namespace, resource_module = NAMESPACE, kx

    def run_trial(self, experiment, trial, assignments):
        """The trial's container command as Katib renders it, run here; the latest value
        of each metric the collector would record, and the output."""
        template = experiment["spec"]["trialTemplate"]
        pod = render(experiment, trial, assignments)["spec"]["template"]["spec"]
        (container,) = [c for c in pod["containers"]
                        if c["name"] == template["primaryContainerName"]]
        done = subprocess.run([sys.executable, *container["command"][1:]], timeout=300,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert done.returncode == 0, done.stdout[-3000:]
        latest = {}
        for line in done.stdout.splitlines():
            for name, value, *_ in KATIB_FILTER.findall(line):
                if value:
                    latest[name] = value
        return latest, done.stdout

    def finish(self, name, status):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status["conditions"] = [
            {"type": "Created", "status": "True", "reason": "ExperimentCreated",
             "lastUpdateTime": now},
            {"type": "Succeeded", "status": "True", "reason": "ExperimentMaxTrialsReached",
             "message": "Experiment has succeeded because max trial count has reached",
             "lastUpdateTime": now}]
        self.replace_status(name, status)


def render(experiment, trial, assignments):
    """The trial spec with Katib's substitutions: the trial's name and its values."""
    template = experiment["spec"]["trialTemplate"]
    text = json.dumps(template["trialSpec"])
    for param in template["trialParameters"]:
        value = trial if param["reference"] == "${trialSpec.Name}" else \
            assignments[param["reference"]]
        text = text.replace(f"${{trialParameters.{param['name']}}}", value)
    return json.loads(text)


def test_katib_runs_the_trials_and_the_step_fetches_the_optimal_model(kubeconfig, shared,
                                                                      tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="tfkfp")
    katib = Katib(kubeconfig)
    outputs = {}

    def play(experiment):
        objective = experiment["spec"]["objective"]["objectiveMetricName"]
        for trial, rate in (("tune-a-good", "0.05"), ("tune-a-slow", "1e-06")):
            outputs[trial] = katib.run_trial(experiment, trial, {"learning_rate": rate})
            katib.replace_status("tune-a", {"trials": 3, "succeededTrialList": [
                t for t in outputs], "trialsSucceeded": len(outputs)})
        stopped = shared / "trials" / "tune-a-stopped" / "checkpoints"  # stopped at epoch 1
        stopped.mkdir(parents=True)
        (stopped / "history.json").write_text(json.dumps({"val_accuracy": [0.1]}))
        best = max(outputs, key=lambda t: float(outputs[t][0][objective]))
        katib.finish("tune-a", {
            "trials": 3, "trialsSucceeded": 2, "trialsEarlyStopped": 1,
            "succeededTrialList": sorted(outputs), "earlyStoppedTrialList": ["tune-a-stopped"],
            "currentOptimalTrial": {
                "bestTrialName": best,
                "parameterAssignments": [{"name": "learning_rate",
                                          "value": "0.05" if best.endswith("good") else "1e-06"}],
                "observation": {"metrics": [{"name": objective,
                                             "latest": outputs[best][0][objective]}]}}})

    check = katib.play("tune-a", play)
    result = tune(str(shared / "data"), str(tmp_path / "model"), search_space=SPACE,
                  algorithm="grid", trials=3, train_options=TINY, engine="katib",
                  engine_options=engine_options(shared, "tune-a",
                                                trials_dir=str(shared / "trials")))
    check()
    for _, printed in outputs.values():  # every epoch's objective, as the collector reads it
        assert len(re.findall(r"^eval_accuracy=", printed, re.M)) == TINY["epochs"]
    assert result.best_number == "tune-a-good" and result.best_settings["learning_rate"] == 0.05
    assert result.counts() == {"complete": 2, "pruned": 1, "failed": 0}
    fetched = saved_weights(tmp_path / "model")
    assert fetched == saved_weights(shared / "trials" / "tune-a-good" / "model")
    assert fetched != saved_weights(shared / "trials" / "tune-a-slow" / "model")
    assert "tune-a-stopped" in result.markdown() and katib.exists("tune-a")  # kept for the UI
    ended = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tune: trial")]
    assert [line.split()[2:4] for line in ended] == [
        ["tune-a-good", "complete"], ["tune-a-slow", "complete"], ["tune-a-stopped", "pruned"]]


def start_step(shared, options, space=SPACE):
    """tune with engine katib in a process of its own, as the step's pod runs it."""
    script = ("import sys; from tfkfp.components.tune.core import tune; "
              f"tune({str(shared / 'data')!r}, {str(shared / 'model')!r}, "
              f"search_space={space!r}, algorithm='grid', trials=2, "
              f"train_options={TINY!r}, engine='katib', engine_options={options!r})")
    return subprocess.Popen([sys.executable, "-c", script], env={**os.environ},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_rerun_follows_the_experiment_its_lost_pod_created(kubeconfig, shared, tmp_path,
                                                             caplog):
    """A step whose pod is lost (SIGKILL: nothing runs on the way out) leaves its experiment
    running on Katib; the rerun with the same experiment_name follows it to its end instead
    of failing on AlreadyExists or starting over, and another request is refused."""
    caplog.set_level(logging.INFO, logger="tfkfp")
    options = engine_options(shared, "tune-r", trials_dir=str(shared / "trials"))
    katib = Katib(kubeconfig)
    lost = start_step(shared, options)
    try:
        katib.wait_for("tune-r", timeout=120)
    finally:
        lost.kill()
        lost.communicate(timeout=60)
    with pytest.raises(TuneError, match="tune-r exists and was not made for this request"):
        tune(str(shared / "data"), str(tmp_path / "other"), search_space={
            "learning_rate": {"type": "categorical", "choices": [0.01, 0.05]}},
            algorithm="grid", trials=2, train_options=TINY, engine="katib",
            engine_options=options)

    def play(experiment):
        objective = experiment["spec"]["objective"]["objectiveMetricName"]
        latest, _ = katib.run_trial(experiment, "tune-r-good", {"learning_rate": "0.05"})
        katib.finish("tune-r", {
            "trials": 1, "trialsSucceeded": 1, "succeededTrialList": ["tune-r-good"],
            "currentOptimalTrial": {
                "bestTrialName": "tune-r-good",
                "parameterAssignments": [{"name": "learning_rate", "value": "0.05"}],
                "observation": {"metrics": [{"name": objective,
                                             "latest": latest[objective]}]}}})

    check = katib.play("tune-r", play)
    result = tune(str(shared / "data"), str(tmp_path / "model"), search_space=SPACE,
                  algorithm="grid", trials=2, train_options=TINY, engine="katib",
                  engine_options=options)
    check()
    assert result.resumed and result.best_number == "tune-r-good"
    assert (tmp_path / "model" / "saved_model.pb").exists()
    assert any("resuming Katib Experiment team/tune-r" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("nodes", [1, 3])  # a batch Job trial, a TrainJob trial
def test_the_experiment_reads_back_as_sent(kubeconfig, nodes):
    from tfkfp.components.tune import katib_rules, options

    settings = {"objective": "eval_accuracy", "direction": "maximize", "algorithm": "tpe",
                "space": options.parse_space({}), "pruning": True, "seed": 3, "fixed": {}}
    body = kx.experiment(f"tune-b{nodes}", NAMESPACE, settings, 4, 2, "gs://b/t/request.json",
                         "gs://b/t", kx.TrialPod("registry.example/tfkfp:1", "tuner"), nodes)
    assert katib_rules.problems(body) == []
    katib = Katib(kubeconfig)
    katib.objects.create_namespaced_custom_object(kx.GROUP, kx.VERSION, NAMESPACE, kx.PLURAL,
                                                  body)
    assert katib.job(f"tune-b{nodes}")["spec"] == body["spec"]
    # the trial as Katib would create it, checked by the API server against its own schema
    trial = render(body, f"tune-b{nodes}-x1", {"learning_rate": "0.01", "batch_size": "64",
                                                "hidden_units": "64", "optimizer": "adam"})
    trial["metadata"] = {"name": f"tune-b{nodes}-x1", "namespace": NAMESPACE}
    if nodes == 1:
        from kubernetes import client

        client.BatchV1Api(katib.api).create_namespaced_job(NAMESPACE, trial, dry_run="All")
    else:
        stored = katib.objects.create_namespaced_custom_object(
            kx.TRAINER_GROUP, "v1alpha1", NAMESPACE, "trainjobs", trial, dry_run="All")
        # nothing pruned by Trainer's schema (it adds its defaults)
        assert {k: stored["spec"][k] for k in trial["spec"]} == trial["spec"]


def test_a_namespace_without_the_injection_label_is_refused_naming_it(kubeconfig, shared):
    with pytest.raises(TuneError) as refused:
        tune(str(shared / "data"), str(shared / "model"), search_space=SPACE,
             algorithm="grid", trials=2, train_options=TINY, engine="katib",
             engine_options={**engine_options(shared, "tune-c"), "namespace": UNLABELLED})
    assert INJECTION_LABEL in str(refused.value) and UNLABELLED in str(refused.value)
    assert not (shared / "model-trials").exists()


def test_sigterm_deletes_the_experiment(kubeconfig, shared):
    step = start_step(shared, engine_options(shared, "tune-d"))
    katib = Katib(kubeconfig)
    try:
        katib.wait_for("tune-d", timeout=120)
    finally:
        step.send_signal(signal.SIGTERM)
        out, _ = step.communicate(timeout=60)
    assert step.returncode != 0 and "stopped by signal 15" in out, out[-2000:]
    assert not katib.exists("tune-d")


def test_a_cluster_without_katib_is_refused_in_seconds_in_one_line(kubeconfig, shared,
                                                                   monkeypatch):
    monkeypatch.setattr(kx, "GROUP", "katib-absent.example.org")  # a resource never installed
    started = time.monotonic()
    with pytest.raises(TuneError) as refused:
        tune(str(shared / "data"), str(shared / "model"), search_space=SPACE,
             algorithm="grid", trials=2, train_options=TINY, engine="katib",
             engine_options=engine_options(shared, "tune-e"))
    assert time.monotonic() - started < 5
    assert "no Katib Experiment resource" in str(refused.value)
    assert "\n" not in str(refused.value)
