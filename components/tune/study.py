"""The study's storage: SQLite at a stable ``study_dir``, so a rerun resumes it.

KFP uploads a step's outputs only after it succeeds and gives a rerun new output locations,
so a study that must survive a killed step lives outside them. Optuna's heartbeat marks a
trial whose process died as failed once its heartbeat lapses, and
RetryHeartbeatStaleTrialCallback queues the same settings again; finished trials are kept.
"""

import json
import logging
import os
import time
import warnings
from typing import Any, Dict, Mapping

from tfkfp.components.common.platform import uris
from tfkfp.components.tune.errors import TuneError
from tfkfp.components.tune.options import grid

log = logging.getLogger("tfkfp")
STUDY_NAME = "tfkfp-tune"
DATABASE = "study.db"
MAX_RETRY = 2  # a trial whose process died is tried this many times more
PRUNER_STARTUP_TRIALS = 2  # trials that run in full before the median means anything


def check_study_dir(study_dir: str) -> str:
    if uris.is_remote(study_dir):
        raise TuneError(f"study_dir {study_dir!r}: the study is an SQLite database, which "
                        "needs a local disk; give a path on a mounted volume")
    return os.path.abspath(study_dir)


def open_study(study_dir: str, settings: Mapping[str, Any], heartbeat_seconds: int):
    """Create the study, or load the one already in ``study_dir``; ``settings`` (objective,
    direction, space, algorithm, ...) must be those it was created with."""
    import optuna

    # heartbeat and retry are "experimental" in Optuna 5; the warnings would only confuse
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    os.makedirs(study_dir, exist_ok=True)
    storage = optuna.storages.RDBStorage(
        f"sqlite:///{os.path.join(study_dir, DATABASE)}",
        engine_kwargs={"connect_args": {"timeout": 60}},  # parallel trials write at once
        heartbeat_interval=heartbeat_seconds, grace_period=2 * heartbeat_seconds,
        heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
            max_retry=MAX_RETRY))
    study = optuna.create_study(
        storage=storage, study_name=STUDY_NAME, direction=settings["direction"],
        sampler=_sampler(settings), pruner=_pruner(settings["pruning"]), load_if_exists=True)
    recorded = study.user_attrs.get("settings")
    if recorded is None:
        study.set_user_attr("settings", json.loads(json.dumps(settings)))
    elif recorded != json.loads(json.dumps(settings)):
        changed = sorted(k for k in settings if recorded.get(k) != settings[k])
        raise TuneError(f"study_dir {study_dir} holds a study with other {', '.join(changed)}; "
                        "give a new study_dir, or the same settings to resume it")
    return study


def _sampler(settings: Mapping[str, Any]):
    import optuna

    seed = settings["seed"] or None
    if settings["algorithm"] == "grid":
        return optuna.samplers.GridSampler(grid(settings["space"]), seed=seed)
    if settings["algorithm"] == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def _pruner(pruning: bool):
    import optuna

    if not pruning:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS)


def resume(study, heartbeat_seconds: int) -> Dict[str, int]:
    """Before new trials: wait out the heartbeat of trials a killed run left running, so
    they are failed and queued again now; the counts found, for the log."""
    import optuna

    states = optuna.trial.TrialState
    found = {s.name.lower(): len(study.get_trials(deepcopy=False, states=(s,)))
             for s in (states.COMPLETE, states.PRUNED, states.FAIL, states.RUNNING)}
    if found["running"]:
        log.info("tune: %d trial(s) were running when the last run stopped; waiting %d s for "
                 "their heartbeat to lapse, then they run again", found["running"],
                 2 * heartbeat_seconds)
        time.sleep(2 * heartbeat_seconds + 1)
        optuna.storages.fail_stale_trials(study)
    if any(found.values()):
        log.info("tune: resuming the study in its study_dir: %d complete, %d pruned, %d failed, "
                 "%d interrupted trial(s) kept", found["complete"], found["pruned"],
                 found["fail"], found["running"])
    return found


def remaining(study, budget: int) -> int:
    """Trials still to run: ``budget`` less those finished, where a failed trial that was
    queued again does not count (its retry does)."""
    import optuna

    states = optuna.trial.TrialState
    trials = study.get_trials(deepcopy=False)
    retry = optuna.storages.RetryHeartbeatStaleTrialCallback
    retried = {n for t in trials for n in retry.retry_history(t)}
    done = [t for t in trials if t.state in (states.COMPLETE, states.PRUNED)
            or (t.state == states.FAIL and t.number not in retried)]
    return max(0, budget - len(done))
