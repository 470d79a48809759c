"""The vertex engine: the HyperparameterTuningJob against the fields GCPC's
HyperparameterTuningJobRunOp sends, a study run to completion and a cancellation on the fake
of tests/fake_vertex/tuning_service.py, the trials' metric file, and the one-line refusal
without Google credentials."""

import json
import os
import signal
import threading
import time

import pytest
from fake_vertex.tuning_service import FakeTuningService
from saved_weights import saved_weights

from tfkfp.components.tune import options, remote_options, vertex_run, vertex_study, vertex_trial
from tfkfp.components.tune.core import tune
from tfkfp.components.tune.errors import SearchSpaceError, TuneError

SPACE = {"learning_rate": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
         "batch_size": {"type": "categorical", "choices": [32, 64]},
         "epochs": {"type": "int", "low": 2, "high": 10}}
PLANTED = {"learning_rate": {"type": "categorical", "choices": [1e-6, 0.05]}}
TINY = {"epochs": 2, "hidden_units": "16"}


def settings(space=SPACE, algorithm="ALGORITHM_UNSPECIFIED"):
    return {"objective": "eval_accuracy", "direction": "maximize", "algorithm": algorithm,
            "space": options.parse_space(space), "fixed": {}}


def test_the_study_spec_is_what_gcpc_serializes_for_the_same_space():
    from google.cloud.aiplatform import hyperparameter_tuning as hpt
    from google.cloud.aiplatform_v1.types import study

    # GCPC's serialize_parameters and serialize_metrics (v1/hyperparameter_tuning_job/utils.py)
    gcpc = [study.StudySpec.ParameterSpec.to_dict(spec._to_parameter_spec(parameter_id=name))
            for name, spec in {
                "learning_rate": hpt.DoubleParameterSpec(min=1e-4, max=0.1, scale="log"),
                "batch_size": hpt.CategoricalParameterSpec(values=["32", "64"]),
                "epochs": hpt.IntegerParameterSpec(min=2, max=10, scale="linear")}.items()]
    metrics = [study.StudySpec.MetricSpec.to_dict(study.StudySpec.MetricSpec(
        {"metric_id": "eval_accuracy", "goal": "MAXIMIZE"}))]
    vertex = remote_options.parse("vertex", {"project": "p", "service_account": "sa@p"})
    request = vertex_study.request(settings(), 6, 2, vertex, "p", "gs://b/t/request.json",
                                   "gs://b/t")
    job = request.hyperparameter_tuning_job
    assert [study.StudySpec.ParameterSpec(p) for p in gcpc] == list(job.study_spec.parameters)
    assert [study.StudySpec.MetricSpec(m) for m in metrics] == list(job.study_spec.metrics)
    sent = type(job).to_dict(job)
    # the payload keys GCPC's op fills in (v1/hyperparameter_tuning_job/component.py)
    assert {"display_name", "study_spec", "max_trial_count", "parallel_trial_count",
            "max_failed_trial_count", "trial_job_spec"} <= set(sent)
    assert {"metrics", "parameters", "algorithm", "measurement_selection_type"} <= set(
        sent["study_spec"])
    assert sent["trial_job_spec"]["base_output_directory"]["output_uri_prefix"] == "gs://b/t"
    assert sent["trial_job_spec"]["service_account"] == "sa@p"
    assert job.study_spec.measurement_selection_type.name == "LAST_MEASUREMENT"
    assert request.parent == "projects/p/locations/us-central1"
    assert type(job).from_json(type(job).to_json(job)) == job  # survives the REST form


@pytest.mark.parametrize("space, algorithm, named", [
    ({"epochs": {"type": "int", "low": 2, "high": 10, "step": 2}}, "random", "epochs"),
    ({}, "tpe", "not offered by engine 'vertex'"),
])
def test_what_vertex_cannot_express_is_refused_before_any_trial(space, algorithm, named):
    with pytest.raises(TuneError) as refused:
        options.TuneOptions(search_space=space, algorithm=algorithm, engine="vertex")
    assert named in str(refused.value) and "'vertex'" in str(refused.value)
    if space:
        assert isinstance(refused.value, SearchSpaceError)


def test_the_trial_writes_the_metric_file_as_cloudml_hypertune(tmp_path, monkeypatch):
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(tmp_path / "hp" / "output.metrics"))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "3")
    report = vertex_trial.HypertuneFile()
    report.report("eval_accuracy", 1, 0.5)
    report.report("eval_accuracy", 2, 0.75)
    lines = (tmp_path / "hp" / "output.metrics").read_text().splitlines()
    entry = json.loads(lines[-1])
    assert len(lines) == 2 and list(entry) == sorted(entry)  # sort_keys, one entry a line
    assert entry["eval_accuracy"] == "0.75" and entry["global_step"] == "2"
    assert entry["trial"] == "3" and isinstance(entry["timestamp"], float)
    assert vertex_trial.arguments(["r.json", "--batch_size=64", "--learning_rate=0.05"]) == (
        "r.json", {"batch_size": 64, "learning_rate": 0.05})


def test_without_google_credentials_vertex_is_refused_in_seconds_in_one_line(
        demo_dataset, tmp_path, monkeypatch):
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no gcloud application-default file
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    started = time.monotonic()
    with pytest.raises(TuneError) as refused:
        tune(demo_dataset, str(tmp_path / "model"), engine="vertex", algorithm="random",
             train_options={"epochs": 1}, engine_options={"project": "p"})
    assert time.monotonic() - started < 5
    assert "needs Google credentials" in str(refused.value)
    assert "\n" not in str(refused.value)


def local_trials(monkeypatch, shared, fake):
    """Trials on a local folder in place of gs:// (the fake runs them on this machine)."""
    monkeypatch.setattr(vertex_run, "trial_paths", lambda dataset, model, options: {
        "dataset": dataset, "trials_dir": str(shared / "trials")})
    monkeypatch.setattr(vertex_run, "job_client", lambda region: fake)


@pytest.mark.slow
def test_the_fake_vertex_runs_the_study_and_the_step_fetches_the_best_model(
        demo_dataset, tmp_path, monkeypatch):
    fake = FakeTuningService()
    local_trials(monkeypatch, tmp_path, fake)
    result = tune(demo_dataset, str(tmp_path / "model"), search_space=PLANTED,
                  algorithm="grid", trials=2, train_options=TINY, engine="vertex",
                  engine_options={"project": "p", "poll_seconds": 0.01})
    assert result.best_settings["learning_rate"] == 0.05 and result.best_number == 2
    assert result.counts() == {"complete": 2, "pruned": 0, "failed": 0}
    assert [r["epochs"] for r in result.trials] == [2, 2]  # a measurement per epoch
    assert "## Trials" in result.markdown()
    fetched = saved_weights(tmp_path / "model")
    assert fetched == saved_weights(tmp_path / "trials" / "2" / "model")
    assert fetched != saved_weights(tmp_path / "trials" / "1" / "model")


def test_sigterm_cancels_the_tuning_job(demo_dataset, tmp_path, monkeypatch):
    fake = FakeTuningService(hold=True)
    local_trials(monkeypatch, tmp_path, fake)

    def cancel_once_created():
        while "create" not in fake.calls:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)  # what kubelet sends a cancelled step

    threading.Thread(target=cancel_once_created, daemon=True).start()
    named = tmp_path / "gcp_resources"
    with pytest.raises(SystemExit, match="cancelled Vertex AI HyperparameterTuningJob .*"
                                         "JOB_STATE_CANCELLED"):
        tune(demo_dataset, str(tmp_path / "model"), search_space=PLANTED, algorithm="grid",
             trials=2, train_options=TINY, engine="vertex",
             engine_options={"project": "p", "poll_seconds": 0.01}, gcp_resources=str(named))
    job = "projects/p/locations/us-central1/hyperparameterTuningJobs/1"
    assert fake.cancelled == {job}
    # as GCPC's HyperparameterTuningJobRunOp names it: KFP's UI links it, cancels it
    assert json.loads(named.read_text()) == {"resources": [{
        "resourceType": "HyperparameterTuningJob",
        "resourceUri": f"https://us-central1-aiplatform.googleapis.com/v1/{job}"}]}

