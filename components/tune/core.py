"""tune: an Optuna study over train's own settings, its best model, settings and report.

Every trial runs train's core in a process of its own (trials.py), ``parallel_trials`` at a
time on the step's cores; the median pruner stops a trial whose per-epoch evaluation trails
the trials before it. The study lives in SQLite at ``study_dir`` (study.py): a rerun with
the same ``study_dir`` keeps the finished trials and runs the interrupted one again.
Everything that can be refused is refused before the first trial (options.py).
With ``engine="katib"`` the same study runs as a Katib Experiment on the cluster instead
(katib_run.py), with ``engine="vertex"`` as a Vertex AI HyperparameterTuningJob
(vertex_run.py); engines.py says what each engine can express.
"""

import dataclasses
import logging
import os
import shutil
import time
from typing import Any, Dict, List, Mapping

from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.common.platform import progress, vertex_jobs
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.common.training.request import check_request, make_config
from tfkfp.components.tune import engines, study
from tfkfp.components.tune.errors import TrialFailed, TuneError
from tfkfp.components.tune.options import (
    TuneOptions,
    check_objective,
    suggest,
)
from tfkfp.components.tune.trials import TrialRequest, run_trial, trial_metrics

log = logging.getLogger("tfkfp")
STUDY_FOLDER = "study"  # study_dir's default, inside the output model's folder


@dataclasses.dataclass(frozen=True)
class TuneResult:
    model_dir: str
    study_dir: str
    objective: str
    direction: str
    best_number: int | str  # a Katib trial is known by its name
    best_value: float
    best_settings: Dict[str, Any]
    best_metrics: Dict[str, float]
    trials: List[Dict[str, Any]]  # report.rows: one per trial
    resumed: bool

    def counts(self) -> Dict[str, int]:
        return {state: sum(r["state"] == state for r in self.trials)
                for state in ("complete", "pruned", "failed")}

    def metrics(self) -> Dict[str, float]:
        """The figures for KFP ``Metrics``."""
        counts = self.counts()
        return {f"best_{self.objective}": self.best_value, "trials_done": float(counts["complete"]),
                "trials_pruned": float(counts["pruned"]), "trials_failed": float(counts["failed"])}

    def markdown(self) -> str:
        from tfkfp.components.tune import report

        return report.markdown(self)


def tune(dataset: str, model_dir: str, options: TuneOptions | None = None, *,
         gcp_resources: str = "", **settings) -> TuneResult:
    """Tune train's settings on a Dataset; the best trial's SavedModel goes to ``model_dir``.

    Args:
        dataset: A Dataset directory written by shard_tfrecords.
        model_dir: Where the best trial's SavedModel is copied.
        options: how to tune (options.TuneOptions: every setting, its default, choices and
            meaning: the search space (options.py's format), objective, direction, trial
            budget, study_dir, pruning, algorithm, engine and its engine_options
            (remote_options.py), the train options every trial shares and the train
            defaults); or give its settings as keywords, e.g. ``trials=4``.
        gcp_resources: A file that names the Vertex AI HyperparameterTuningJob once
            engine vertex has created it (KFP's UI links it, and a cancelled run cancels
            it), and lists no resources otherwise; empty: none written.
    """
    if options is not None and not isinstance(options, TuneOptions):
        raise TypeError(f"options must be a TuneOptions, got {type(options).__name__}; give "
                        "a search space as search_space=...")
    options = TuneOptions.given(options, settings)
    engine_settings = options.engine_settings()
    space, settings, folder, request = _check(dataset, model_dir, options)
    trials, parallel_trials = options.trials, options.parallel_trials
    if gcp_resources:
        vertex_jobs.write_gcp_resources(gcp_resources)  # engine vertex names its job there
    if options.engine == "vertex":
        from tfkfp.components.tune import vertex_run

        if options.pruning:
            log.info("tune: engine vertex stops no trial early (pruning is the local and "
                     "katib engines')")
        return vertex_run.run(dataset, model_dir, settings, trials, parallel_trials,
                              engine_settings, gcp_resources=gcp_resources)
    if options.engine == "katib":
        from tfkfp.components.tune import katib_run

        return katib_run.run(dataset, model_dir, settings, trials, parallel_trials,
                             engine_settings)
    heartbeat_seconds = options.heartbeat_seconds
    the_study = study.open_study(folder, settings, heartbeat_seconds)
    found = study.resume(the_study, heartbeat_seconds)
    todo = study.remaining(the_study, trials)
    log.info("tune: %d trial(s) to run, %d at a time", todo, parallel_trials)
    if todo:
        the_study.optimize(lambda t: run_trial(t, request, suggest(t, space)),
                           n_trials=todo, n_jobs=parallel_trials, catch=(TrialFailed,),
                           callbacks=[_progress(settings["objective"], todo)])
    return _result(the_study, request, folder, model_dir, settings,
                   resumed=any(found.values()))


def _check(dataset: str, model_dir: str, options: TuneOptions):
    """Everything refused before the first trial (the options checked themselves when
    built: space, objective, budget, engine); the objective against the Dataset's task; the
    settings name the algorithm as the engine does."""
    space, fixed = options.parsed()
    algorithm = engines.check_engine(options.engine, options.algorithm, space)
    objective, direction = check_objective(
        options.objective, options.direction, learned_task(dataset, model_dir, fixed))
    folder = study.check_study_dir(options.study_dir or os.path.join(model_dir, STUDY_FOLDER))
    settings = {"objective": objective, "direction": direction, "space": space,
                "algorithm": algorithm, "pruning": options.pruning,
                "seed": options.sampler_seed, "fixed": fixed}
    request = TrialRequest(dataset, os.path.join(folder, "trials"), objective, fixed,
                           options.parallel_trials)
    return space, settings, folder, request


def learned_task(dataset: str, model_dir: str, fixed: Mapping[str, Any]) -> str:
    """What train will learn from the Dataset's label (classification or regression), after
    train's own checks of the Dataset (splits, schema, label)."""
    try:
        return check_request(make_config(dataset, model_dir, dict(fixed)))[1]
    except (SchemaError, TrainConfigError, FileNotFoundError) as err:
        raise TuneError(f"dataset {dataset}: {err}") from err


def _progress(objective: str, todo: int):
    """A study callback: each trial as it ends, and the best so far (also as a progress line
    of the ``todo`` trials this run runs)."""
    from tfkfp.components.tune import report

    started, ended = time.monotonic(), iter(range(1, todo + 1))

    def said(the_study, trial) -> None:
        try:
            best = f"{the_study.best_value:.4f} (trial {the_study.best_trial.number})"
        except ValueError:  # no trial complete yet
            best = "none yet"
        value = "" if trial.value is None else f" {objective}={trial.value:.4f}"
        state = report.STATES.get(trial.state.name, trial.state.name.lower())
        log.info("tune: trial %d %s%s %s; best so far %s", trial.number, state, value,
                 trial.params, best)
        progress.report("tuning", next(ended, todo), "trials", time.monotonic() - started, todo,
                        {"best": best})

    return said


def _result(the_study, request: TrialRequest, folder: str, model_dir: str,
            settings: Dict[str, Any], resumed: bool) -> TuneResult:
    import optuna

    from tfkfp.components.tune import report

    finished = the_study.get_trials(deepcopy=False)
    complete = [t for t in finished if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise TrialFailed(f"none of the study's {len(finished)} trial(s) completed; see the "
                          f"trial logs under {request.trials_dir}")
    best = the_study.best_trial
    _keep_best_model(request, best.number, model_dir)
    return TuneResult(
        model_dir=model_dir, study_dir=folder,
        objective=settings["objective"], direction=settings["direction"],
        best_number=best.number, best_value=float(best.value),
        best_settings={**settings["fixed"], **best.params},
        best_metrics=trial_metrics(request, best.number), trials=report.rows(finished),
        resumed=resumed)


def _keep_best_model(request: TrialRequest, best: int, model_dir: str) -> None:
    """Copy the best trial's SavedModel to ``model_dir``; other trials' models go (a study
    only needs their figures, and an artifact holding them all would be large)."""
    shutil.copytree(request.model_dir(best), model_dir, dirs_exist_ok=True)
    for name in os.listdir(request.trials_dir):
        if name != f"{best:04d}":
            shutil.rmtree(os.path.join(request.trials_dir, name, "model"), ignore_errors=True)
