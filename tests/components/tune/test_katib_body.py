"""The katib engine without a cluster: the Experiment body against the rules of Katib's
admission webhook (katib_rules.py, read from Katib 0.19's validator), what an engine cannot
express, the trial's command line, and the one-line refusals when no cluster answers."""

import copy
import socket
import time

import pytest
import yaml

from tfkfp.components.tune import engines, katib_experiment, katib_rules, katib_trial, options
from tfkfp.components.tune.core import tune
from tfkfp.components.tune.errors import SearchSpaceError, TuneError

SETTINGS = {"objective": "eval_accuracy", "direction": "maximize",
            "space": options.parse_space({}), "algorithm": "tpe", "pruning": True, "seed": 7,
            "fixed": {"epochs": 1}}
POD = katib_experiment.TrialPod("registry.example/tfkfp:1", "tuner", gpus=1,
                                volume_claim="shared", mount_path="/mnt/data")


def body(**changes):
    return katib_experiment.experiment("tune-1", "team", {**SETTINGS, **changes}, 6, 2,
                                       "gs://b/trials/request.json", "gs://b/trials", POD)


def test_the_experiment_passes_the_webhook_rules_and_says_what_was_chosen():
    sent = body()
    assert katib_rules.problems(sent) == []
    spec = sent["spec"]
    assert spec["resumePolicy"] == "Never" and spec["trialTemplate"]["retain"] is False
    assert spec["objective"]["metricStrategies"] == [{"name": "eval_accuracy",
                                                      "value": "latest"}]
    assert spec["earlyStopping"]["algorithmName"] == "medianstop"
    assert spec["metricsCollectorSpec"] == {"collector": {"kind": "StdOut"}}
    assert spec["algorithm"]["algorithmSettings"] == [{"name": "random_state", "value": "7"}]
    rate = next(p for p in spec["parameters"] if p["name"] == "learning_rate")
    assert rate["feasibleSpace"]["distribution"] == "logUniform"
    pod = spec["trialTemplate"]["trialSpec"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == spec["trialTemplate"]["primaryContainerName"]
    assert "gs://b/trials/${trialParameters.trialName}" in container["command"]
    assert "learning_rate=${trialParameters.learning_rate}" in container["command"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_grid_takes_no_seed_since_katibs_optuna_service_would_not_read_it():
    assert "algorithmSettings" not in body(algorithm="grid")["spec"]["algorithm"]


@pytest.mark.parametrize("break_it, named", [
    (lambda s: s["trialTemplate"]["trialParameters"].pop(), "not in trialParameters"),
    (lambda s: s["trialTemplate"]["trialParameters"].append(
        {"name": "unused", "reference": "${trialSpec.Namespace}"}),
     "${trialParameters.unused}"),
    (lambda s: s["trialTemplate"]["trialParameters"].append(
        {"name": "other", "reference": "dropout"}), "not in spec.parameters"),
    (lambda s: s["trialTemplate"].update(primaryContainerName="main"), "primaryContainerName"),
    (lambda s: s["algorithm"].update(algorithmName="optuna"), "katib-config"),
    (lambda s: s["earlyStopping"].update(algorithmName="hyperband"), "katib-config"),
    (lambda s: s["earlyStopping"]["algorithmSettings"].append(
        {"name": "start_step", "value": "0"}), "start_step"),
    (lambda s: s.update(parallelTrialCount=9), "parallelTrialCount"),
    (lambda s: s.update(resumePolicy="Always"), "resumePolicy"),
    (lambda s: s["parameters"][0]["feasibleSpace"].update(distribution="beta"), "distribution"),
    (lambda s: s["parameters"][0]["feasibleSpace"].pop("min"), "needs min and max"),
    (lambda s: s["trialTemplate"]["trialSpec"].update(metadata={"name": "x"}), "omitted"),
    (lambda s: s.update(metricsCollectorSpec={"collector": {"kind": "StdOut"}, "source": {
        "filter": {"metricsFormat": ["([a-z]+)=.*"]}}}), "two subexpressions"),
])
def test_each_webhook_rule_names_what_it_refuses(break_it, named):
    sent = copy.deepcopy(body())
    break_it(sent["spec"])
    assert any(named in problem for problem in katib_rules.problems(sent)), \
        katib_rules.problems(sent)


def test_a_long_experiment_name_is_refused_as_the_webhook_does():
    sent = body()
    sent["metadata"]["name"] = "t" * 41
    assert "40 characters" in katib_rules.problems(sent)[0]


@pytest.mark.parametrize("engine, algorithm, space, named", [
    ("katib", "bayesianoptimization",
     {"learning_rate": {"type": "float", "low": 0.001, "high": 0.1}}, "learning_rate"),
    ("katib", "bayesianoptimization",
     {"batch_size": {"type": "int", "low": 16, "high": 128, "log": True}}, "batch_size"),
])
def test_a_space_the_engine_cannot_express_is_refused_naming_setting_and_engine(
        engine, algorithm, space, named):
    with pytest.raises(SearchSpaceError) as refused:
        options.TuneOptions(search_space=space, algorithm=algorithm, engine=engine)
    assert named in str(refused.value) and f"engine {engine!r}" in str(refused.value)


def test_engines_offer_their_own_algorithms():
    with pytest.raises(TuneError, match="not offered by engine 'local'"):
        options.TuneOptions(algorithm="bayesianoptimization")
    with pytest.raises(TuneError, match="engine 'vizier'"):
        options.TuneOptions(engine="vizier")
    assert engines.check_engine("katib", "tpe", {}) == "tpe"


def test_the_trial_reads_katibs_text_values_as_train_fields():
    assert katib_trial.setting("batch_size=64") == ("batch_size", 64)
    assert katib_trial.setting("learning_rate=1e-06") == ("learning_rate", 1e-6)
    assert katib_trial.setting("hidden_units=128,64") == ("hidden_units", "128,64")


def _kubeconfig(tmp_path, port):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": f"https://127.0.0.1:{port}",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "t", "user": {"token": "x"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}))
    return path


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("setup, said", [
    (lambda tmp: tmp / "no-such-kubeconfig", "needs a Kubernetes cluster"),
    (lambda tmp: _kubeconfig(tmp, _closed_port()), "does not answer"),
])
def test_without_a_cluster_katib_is_refused_in_seconds_in_one_line(
        demo_dataset, tmp_path, monkeypatch, setup, said):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(setup(tmp_path)))
    started = time.monotonic()
    with pytest.raises(TuneError) as refused:
        tune(demo_dataset, str(tmp_path / "model"), engine="katib", train_options={"epochs": 1},
             engine_options={"volume_claim": "shared", "mount_path": "/",
                             "trials_dir": str(tmp_path / "trials")})
    assert time.monotonic() - started < 5
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert not (tmp_path / "trials").exists()  # nothing written before the check


def test_katib_trials_need_storage_their_pods_reach(demo_dataset, tmp_path):
    with pytest.raises(TuneError, match="cannot read the Dataset"):
        tune(demo_dataset, str(tmp_path / "model"), engine="katib")
    with pytest.raises(TuneError, match="study_dir is the local engine's"):
        tune(demo_dataset, str(tmp_path / "model"), engine="katib", study_dir=str(tmp_path))



@pytest.mark.parametrize("fixed, nodes", [
    ({"strategy": "multi_worker_mirrored", "workers": 3}, 3),
    ({"strategy": "parameter_server", "workers": 2, "parameter_servers": 1}, 4),
    ({"epochs": 1}, 1),
])
def test_a_multi_worker_trial_is_a_trainjob_katib_watches_on_node_0(fixed, nodes):
    from tfkfp.components.tune.katib_run import trial_nodes

    assert trial_nodes(options.fixed_settings(fixed, {}, "katib")) == nodes
    sent = katib_experiment.experiment("tune-1", "team", SETTINGS, 6, 2, "gs://b/t/r.json",
                                       "gs://b/t", POD, nodes)
    assert katib_rules.problems(sent) == []
    template = sent["spec"]["trialTemplate"]
    if nodes == 1:
        assert template["trialSpec"]["kind"] == "Job"
        return
    assert template["trialSpec"]["kind"] == "TrainJob"
    assert template["primaryContainerName"] == "node"
    assert template["primaryPodLabels"]["batch.kubernetes.io/job-completion-index"] == "0"
    trainer = template["trialSpec"]["spec"]["trainer"]
    assert trainer["numNodes"] == nodes and "${trialParameters.trialName}" in str(trainer)
    assert template["trialSpec"]["spec"]["runtimeRef"]["name"] == "tfkfp-tensorflow"


@pytest.mark.parametrize("engine", ["local", "vertex"])
def test_only_katib_runs_multi_worker_trials(engine):
    with pytest.raises(TuneError, match=f"engine {engine!r}.*engine katib"):
        options.fixed_settings({"strategy": "multi_worker_mirrored", "workers": 2}, {}, engine)
