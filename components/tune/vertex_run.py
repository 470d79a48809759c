"""The vertex engine: create the HyperparameterTuningJob, follow it, fetch the best model.

Without Google credentials it is refused in seconds, before anything is written. The job is
followed as the suite's other Vertex AI jobs are (common/platform/follow.py and
vertex_jobs.py): each trial is logged as it ends, and SIGTERM (a cancelled run), a deadline
or a lost API cancels the job. The best trial is the succeeded one whose final measurement
of the objective is best in the study's direction; its model is the SavedModel it wrote at
``AIP_MODEL_DIR``.
"""

import json
import logging
from typing import Any, Dict, List

from tfkfp.components.common.platform import uris, vertex_jobs
from tfkfp.components.common.platform.follow import follow
from tfkfp.components.common.training.config import RESULT_FILE
from tfkfp.components.tune import vertex_study
from tfkfp.components.tune.errors import TrialFailed, TuneError
from tfkfp.components.tune.katib_trial import setting
from tfkfp.components.tune.remote_options import VertexOptions, trial_paths
from tfkfp.components.tune.trials import figures

log = logging.getLogger("tfkfp")
KIND = "HyperparameterTuningJob"
STATES = {"SUCCEEDED": "complete", "INFEASIBLE": "failed"}  # a trial's ended states
NO_CREDENTIALS = ("engine 'vertex' needs Google credentials (a service account in the step, "
                  "GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth application-default "
                  "login); none were found")


def project_of(options: VertexOptions) -> str:
    """The options' project, else the credentials'; no credentials: a one-line TuneError."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        _, project = google.auth.default()
    except DefaultCredentialsError:
        raise TuneError(NO_CREDENTIALS) from None
    if not (options.project or project):
        raise TuneError("engine 'vertex' needs a Google Cloud project: set engine_options "
                        "project")
    return options.project or project


def job_client(region: str):
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import aiplatform_v1 as v1

    try:
        return v1.JobServiceClient(client_options={"api_endpoint":
                                                   f"{region}-aiplatform.googleapis.com"})
    except DefaultCredentialsError:
        raise TuneError(NO_CREDENTIALS) from None


def run(dataset: str, model_dir: str, settings: Dict[str, Any], budget: int,
        parallel_trials: int, options: VertexOptions, client=None, gcp_resources: str = ""):
    """Tune on Vertex AI; a core.TuneResult whose model is the best trial's. Once the job
    exists it is named in ``gcp_resources`` (a path; empty: nowhere), as GCPC's
    HyperparameterTuningJobRunOp names it."""
    project = options.project or project_of(options)  # credentials first: the one line
    client = client or job_client(options.region)
    paths = trial_paths(dataset, model_dir, options)
    request_uri = uris.join(paths["trials_dir"], "request.json")
    req = vertex_study.request(settings, budget, parallel_trials, options, project,
                               request_uri, paths["trials_dir"])
    uris.makedirs(paths["trials_dir"])
    uris.write_text_atomic(request_uri, json.dumps(
        {"dataset": paths["dataset"], "objective": settings["objective"],
         "fixed": settings["fixed"]}))
    job = _create_and_follow(client, req, options, settings["objective"], gcp_resources)
    if job.state.name != "JOB_STATE_SUCCEEDED":
        raise TrialFailed(f"Vertex AI {KIND} {job.name} ended {job.state.name}: "
                          f"{job.error.message or 'no error message'}")
    return _result(job, paths["trials_dir"], model_dir, settings)


def _create_and_follow(client, req, options: VertexOptions, objective: str,
                       gcp_resources: str = ""):
    with vertex_jobs.cancelled_if_stopped(
            "tuning", KIND, gcp_resources,
            lambda name: client.cancel_hyperparameter_tuning_job(name=name),
            lambda name: client.get_hyperparameter_tuning_job(name=name).state.name) as started:
        created = client.create_hyperparameter_tuning_job(request=req)
        started.created(created.name)
        log.info("created Vertex AI %s %s: %d trial(s), %d at a time, algorithm %s",
                 KIND, created.name, req.hyperparameter_tuning_job.max_trial_count,
                 req.hyperparameter_tuning_job.parallel_trial_count,
                 req.hyperparameter_tuning_job.study_spec.algorithm.name)
        return _follow(client, created.name, options, objective)


def _follow(client, name: str, options: VertexOptions, objective: str):
    seen: set = set()

    def observe(job) -> None:
        for trial in job.trials:
            if trial.state.name in STATES and trial.id not in seen:
                seen.add(trial.id)
                row = trial_row(trial, objective)
                value = "" if row["value"] is None else f" {objective}={row['value']:.4f}"
                log.info("tune: trial %s %s%s %s; %d of %d trial(s) ended", trial.id,
                         row["state"], value, row["settings"], len(seen),
                         job.max_trial_count)

    def expired(job) -> BaseException:
        return TuneError(f"Vertex AI {KIND} {name} passed its deadline of "
                         f"{options.deadline_seconds} s (engine_options deadline_seconds)")

    return follow(f"Vertex AI {KIND} {name}",
                  lambda: client.get_hyperparameter_tuning_job(name=name),
                  lambda job: job.state.name in vertex_jobs.ENDED,
                  interval=options.poll_seconds, deadline=options.deadline_seconds,
                  observe=observe, expired=expired,
                  describe=lambda job: f"{job.state.name}, {len(job.trials)} trial(s)")


def trial_row(trial, objective: str) -> Dict[str, Any]:
    """One Vertex AI Trial as the report's row."""
    values = {m.metric_id: m.value for m in trial.final_measurement.metrics}
    number = int(trial.id) if trial.id.isdigit() else trial.id  # Vertex AI counts from 1
    return {"number": number, "state": STATES.get(trial.state.name, "failed"),
            "value": values.get(objective), "epochs": trial.final_measurement.step_count,
            "seconds": None, "note": trial.infeasible_reason,
            "settings": dict(setting(f"{p.parameter_id}={p.value}") for p in trial.parameters)}


def _result(job, trials_dir: str, model_dir: str, settings: Dict[str, Any]):
    from tfkfp.components.tune.core import TuneResult

    objective = settings["objective"]
    rows: List[Dict[str, Any]] = [trial_row(t, objective) for t in job.trials]
    done = [r for r in rows if r["state"] == "complete" and r["value"] is not None]
    if not done:
        raise TrialFailed(f"none of Vertex AI {KIND} {job.name}'s {len(rows)} trial(s) "
                          f"reported {objective}; see the trials under {trials_dir}")
    pick = max if settings["direction"] == "maximize" else min
    best = pick(done, key=lambda r: r["value"])
    folder = uris.join(trials_dir, str(best["number"]))
    uris.copy_tree(uris.join(folder, "model"), model_dir)
    return TuneResult(
        model_dir=model_dir, study_dir=f"Vertex AI {KIND} {job.name}, trials in {trials_dir}",
        objective=objective, direction=settings["direction"], best_number=best["number"],
        best_value=float(best["value"]), best_settings={**settings["fixed"], **best["settings"]},
        best_metrics=figures(json.loads(uris.read_text(uris.join(folder, RESULT_FILE)))),
        trials=rows, resumed=False)
