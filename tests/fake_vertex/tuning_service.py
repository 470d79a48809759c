"""Vertex AI's hyperparameter tuning, faked in process as its REST reference describes
``projects.locations.hyperparameterTuningJobs`` (``create``, ``get``, ``cancel``), for the
tune step's vertex engine tests. It stands in for ``aiplatform_v1.JobServiceClient``.

- ``create``: the job must name a display name, the study's metrics and parameters, the
  trial counts (parallel at most max) and a trial job spec with worker pools, as the API
  requires; it starts JOB_STATE_PENDING under ``projects/P/locations/L/hyperparameterTuningJobs/N``.
- ``get``: each read runs the next trial as Vertex AI would: the first pool's container
  command (its ``python`` this interpreter) with ``--<parameter>=<value>`` appended,
  ``AIP_MODEL_DIR`` = ``<base_output_directory>/<trial id>/model/``, ``CLOUD_ML_TRIAL_ID``
  and ``CLOUD_ML_HP_METRIC_FILE`` set. The trial's final measurement is read from that file
  (the last or best entry of the study's metric, as measurement_selection_type says). A
  trial that reports nothing is INFEASIBLE. After max_trial_count trials: SUCCEEDED.
- ``cancel``: the job ends JOB_STATE_CANCELLED at the next read.

Values are suggested in grid order for GRID_SEARCH and at random (seeded) otherwise. With
``hold=True`` no trial runs: the job stays RUNNING until cancelled."""

import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
from typing import Dict, List

from google.cloud import aiplatform_v1 as v1


class FakeTuningService:
    def __init__(self, hold: bool = False, seed: int = 0):
        self.hold, self.rng = hold, random.Random(seed)
        self.jobs: Dict[str, v1.HyperparameterTuningJob] = {}
        self.cancelled: set = set()
        self.outputs: Dict[str, str] = {}  # trial id -> its container's output
        self.calls: List[str] = []

    def create_hyperparameter_tuning_job(self, request):
        self.calls.append("create")
        job = v1.HyperparameterTuningJob(request.hyperparameter_tuning_job)
        _check(job)
        job.name = f"{request.parent}/hyperparameterTuningJobs/{len(self.jobs) + 1}"
        job.state = v1.JobState.JOB_STATE_PENDING
        self.jobs[job.name] = job
        return job

    def get_hyperparameter_tuning_job(self, name):
        self.calls.append("get")
        job = self.jobs[name]
        if name in self.cancelled:
            job.state = v1.JobState.JOB_STATE_CANCELLED
        elif job.state.name in ("JOB_STATE_PENDING", "JOB_STATE_RUNNING"):
            job.state = v1.JobState.JOB_STATE_RUNNING
            if not self.hold and len(job.trials) < job.max_trial_count:
                job.trials.append(self._run_trial(job, str(len(job.trials) + 1)))
            elif not self.hold:
                job.state = v1.JobState.JOB_STATE_SUCCEEDED
        return v1.HyperparameterTuningJob(job)

    def cancel_hyperparameter_tuning_job(self, name):
        self.calls.append("cancel")
        self.cancelled.add(name)

    def _suggest(self, job, number: int) -> Dict[str, object]:
        specs = list(job.study_spec.parameters)
        if job.study_spec.algorithm.name == "GRID_SEARCH":
            grid = list(itertools.product(*[s.categorical_value_spec.values for s in specs]))
            return dict(zip([s.parameter_id for s in specs], grid[(number - 1) % len(grid)]))
        return {s.parameter_id: _draw(self.rng, s) for s in specs}

    def _run_trial(self, job, trial_id: str) -> v1.Trial:
        values = self._suggest(job, int(trial_id))
        pool = job.trial_job_spec.worker_pool_specs[0].container_spec
        base = job.trial_job_spec.base_output_directory.output_uri_prefix.rstrip("/")
        metric_file = os.path.join(tempfile.mkdtemp(), "output.metrics")
        env = {**os.environ, **{e.name: e.value for e in pool.env},
               "AIP_MODEL_DIR": f"{base}/{trial_id}/model/", "CLOUD_ML_TRIAL_ID": trial_id,
               "CLOUD_ML_HP_METRIC_FILE": metric_file}
        command = [sys.executable, *list(pool.command)[1:], *pool.args,
                   *(f"--{k}={v}" for k, v in values.items())]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        self.outputs[trial_id] = done.stdout
        trial = v1.Trial(id=trial_id, parameters=[
            {"parameter_id": k, "value": v} for k, v in values.items()])
        metric = job.study_spec.metrics[0]
        measured = _measure(metric_file, metric.metric_id, metric.goal.name,
                            job.study_spec.measurement_selection_type.name)
        if done.returncode != 0 or measured is None:
            trial.state, trial.infeasible_reason = v1.Trial.State.INFEASIBLE, \
                f"exit status {done.returncode}, metric {'missing' if measured is None else 'ok'}"
            return trial
        step, value = measured
        trial.state = v1.Trial.State.SUCCEEDED
        trial.final_measurement = v1.Measurement(step_count=step, metrics=[
            {"metric_id": metric.metric_id, "value": value}])
        return trial


def _check(job) -> None:
    spec = job.study_spec
    missing = [name for name, given in (
        ("displayName", job.display_name), ("studySpec.metrics", spec.metrics),
        ("studySpec.parameters", spec.parameters), ("maxTrialCount", job.max_trial_count),
        ("parallelTrialCount", job.parallel_trial_count),
        ("trialJobSpec.workerPoolSpecs", job.trial_job_spec.worker_pool_specs)) if not given]
    if missing or job.parallel_trial_count > job.max_trial_count:
        raise ValueError(f"400 INVALID_ARGUMENT: missing {missing} or parallelTrialCount > "
                         "maxTrialCount")


def _draw(rng, spec):
    if spec.categorical_value_spec.values:
        return rng.choice(list(spec.categorical_value_spec.values))
    if spec.double_value_spec.max_value:
        return rng.uniform(spec.double_value_spec.min_value, spec.double_value_spec.max_value)
    return rng.randint(spec.integer_value_spec.min_value, spec.integer_value_spec.max_value)


def _measure(path: str, metric: str, goal: str, selection: str):
    """(step, value) of the metric file's last entry, or its best one."""
    try:
        with open(path) as f:
            entries = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return None
    found = [(int(e["global_step"]), float(e[metric])) for e in entries if metric in e]
    if not found:
        return None
    if selection == "BEST_MEASUREMENT":
        pick = max if goal == "MAXIMIZE" else min
        return pick(found, key=lambda entry: entry[1])
    return found[-1]
