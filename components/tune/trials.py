"""One Optuna trial: train in a process of its own, pruned on its per-epoch evaluation.

The process is train's own task entry point (``python -m tfkfp.components.train.worker
CONFIG_JSON RESULT_JSON``, its training loop in one process), so a trial is a train run and
tune imports nothing of train. train writes its per-epoch history (``history.json``, the
eval figures as ``val_*``) to its checkpoint_dir after every epoch; the step reads it while
the trial runs and reports each new epoch to the pruner, so train needs no tuning hook.
"""

import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, Mapping

from tfkfp.components.common.platform.cpus import thread_environment
from tfkfp.components.common.training.config import CONFIG_FILE, HISTORY_FILE, RESULT_FILE
from tfkfp.components.common.training.request import make_config
from tfkfp.components.tune.errors import TrialFailed

log = logging.getLogger("tfkfp")
POLL_SECONDS = 0.5
LOG_TAIL = 1500  # characters of a failed trial's log quoted in its error
TRAIN_PROCESS = "tfkfp.components.train.worker"  # train's one-process entry point
# train's figures a trial keeps: its eval figures and what it cost
KEPT = ("parameters", "examples_per_second", "steps_per_epoch", "global_batch_size")


@dataclasses.dataclass(frozen=True)
class TrialRequest:
    """What every trial of a study shares."""

    dataset: str
    trials_dir: str
    objective: str  # an eval_ figure, e.g. eval_accuracy
    fixed: Mapping[str, Any]  # train options the space does not search
    parallel_trials: int = 1

    def trial_dir(self, number: int) -> str:
        return os.path.join(self.trials_dir, f"{number:04d}")

    def model_dir(self, number: int) -> str:
        return os.path.join(self.trial_dir(number), "model")


def run_trial(trial, request: TrialRequest, settings: Dict[str, Any]) -> float:
    """Train with ``settings``; the objective's final value. Raises optuna.TrialPruned when
    the pruner stops it, TrialFailed when train fails."""
    folder = request.trial_dir(trial.number)
    shutil.rmtree(folder, ignore_errors=True)  # a number is never reused; leftovers are stale
    os.makedirs(folder)
    checkpoints = os.path.join(folder, "checkpoints")
    config = make_config(request.dataset, request.model_dir(trial.number),
                         {**request.fixed, **settings, "checkpoint_dir": checkpoints})
    paths = {k: os.path.join(folder, k) for k in (CONFIG_FILE, RESULT_FILE, "trial.log")}
    with open(paths[CONFIG_FILE], "w") as f:
        f.write(config.to_json())
    env = {**os.environ, **thread_environment(request.parallel_trials)}
    try:
        with open(paths["trial.log"], "w") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", TRAIN_PROCESS, paths[CONFIG_FILE], paths[RESULT_FILE]],
                stdout=log_file, stderr=subprocess.STDOUT, env=env)
            try:
                _watch(trial, process, os.path.join(checkpoints, HISTORY_FILE),
                       request.objective, config.epochs)
            finally:
                if process.poll() is None:
                    process.kill()
                process.wait()
        try:
            return _objective(trial.number, process.returncode, paths, request.objective)
        except TrialFailed as err:  # the report says why, the log has the rest
            trial.set_user_attr("error", f"{str(err).splitlines()[0]} (see {paths['trial.log']})")
            raise
    finally:
        shutil.rmtree(checkpoints, ignore_errors=True)  # the study resumes trials, not epochs


def _watch(trial, process: subprocess.Popen, history_path: str, objective: str,
           epochs: int) -> None:
    """Report each epoch's evaluation as train writes it; prune when the pruner says so
    (not after the last epoch: the trial has cost all it will by then)."""
    import optuna

    key = "val_" + objective[len("eval_"):]
    reported = 0
    while True:
        running = process.poll() is None
        values = _history(history_path).get(key, [])
        for epoch in range(reported, len(values)):
            trial.report(values[epoch], epoch)
            reported = epoch + 1
            if running and reported < epochs and trial.should_prune():
                process.kill()
                trial.set_user_attr("stopped", f"pruned after epoch {reported}")
                raise optuna.TrialPruned(f"pruned after epoch {reported}: {key}="
                                         f"{values[epoch]:.4f}")
        if not running:
            return
        time.sleep(POLL_SECONDS)


def _history(path: str) -> Dict[str, list]:
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):  # not written yet, or mid-replace
        return {}


def trial_metrics(request: TrialRequest, number: int) -> Dict[str, float]:
    """The figures train reported for a finished trial."""
    with open(os.path.join(request.trial_dir(number), RESULT_FILE)) as f:
        return _figures(json.load(f))


def figures(result: Dict[str, Any]) -> Dict[str, float]:
    """The numbers of train's result (its result JSON) that describe the trial's model."""
    return _figures(result)


def _objective(number: int, returncode: int, paths: Dict[str, str], objective: str) -> float:
    if returncode != 0:
        with open(paths["trial.log"], errors="replace") as f:
            tail = f.read()[-LOG_TAIL:]
        raise TrialFailed(f"trial {number}: train exited with status {returncode}; the end "
                          f"of {paths['trial.log']}:\n{tail}")
    with open(paths[RESULT_FILE]) as f:
        metrics = _figures(json.load(f))
    if objective not in metrics:
        raise TrialFailed(f"trial {number}: train reported no {objective}; it reported "
                          f"{', '.join(sorted(metrics))}")
    return float(metrics[objective])


def _figures(result: Dict[str, Any]) -> Dict[str, float]:
    """The numbers of train's result that describe the trial's model."""
    return {k: float(v) for k, v in result.items()
            if (k.startswith("eval_") or k in KEPT) and isinstance(v, (int, float))}
