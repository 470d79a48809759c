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
from tfkfp.components.tune import engines, options, study
from tfkfp.components.tune.errors import TrialFailed, TuneError
from tfkfp.components.tune.trials import TrialRequest, run_trial, trial_metrics

log = logging.getLogger("tfkfp")
STUDY_FOLDER = "study"  # study_dir's default, inside the output model's folder
HEARTBEAT_SECONDS = 10


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


def tune(dataset: str, model_dir: str, search_space: Mapping[str, Any] | str | None = None,
         objective: str = "", direction: str = "auto", trials: int = 8,
         parallel_trials: int = 1, study_dir: str = "", pruning: bool = True,
         algorithm: str = "tpe", sampler_seed: int = 0,
         train_options: Mapping[str, Any] | None = None,
         heartbeat_seconds: int = HEARTBEAT_SECONDS, engine: str = "local",
         engine_options: Mapping[str, Any] | None = None,
         train_defaults: Mapping[str, Any] | None = None,
         gcp_resources: str = "") -> TuneResult:
    """Tune train's settings on a Dataset; the best trial's SavedModel goes to ``model_dir``.

    Args:
        dataset: A Dataset directory written by shard_tfrecords.
        model_dir: Where the best trial's SavedModel is copied.
        search_space: The settings searched (options.py's format); empty: the default.
        objective: The eval figure optimised: eval_accuracy or eval_loss (classification),
            eval_rmse, eval_mae, eval_r2 or eval_loss (regression); empty: the first.
        direction: maximize, minimize or auto (the figure's own).
        trials: The study's trial budget, trials of an earlier run of the study included.
        parallel_trials: Trials running at a time.
        study_dir: A local folder for the study; empty: ``model_dir``/study.
        pruning: Stop trials whose per-epoch evaluation trails the median.
        algorithm: tpe, random or grid (categorical settings only).
        sampler_seed: The sampler's seed (0: none); train's own ``seed`` is a train
            option.
        train_options: train options every trial shares (epochs, model_name, ...).
        heartbeat_seconds: How often a running trial tells the study it is alive.
        engine: local (an Optuna study in this process), katib (a Katib Experiment) or
            vertex (a Vertex AI HyperparameterTuningJob).
        engine_options: The remote engine's options (remote_options.py).
        train_defaults: train settings for what neither the space nor ``train_options``
            sets (the training pipeline's own parameters).
        gcp_resources: A file that names the Vertex AI HyperparameterTuningJob once
            engine vertex has created it (KFP's UI links it, and a cancelled run cancels
            it), and lists no resources otherwise; empty: none written.
    """
    from tfkfp.components.tune import remote_options

    engine_settings = remote_options.parse(engine, engine_options)
    if engine != "local" and study_dir:
        raise TuneError(f"study_dir is the local engine's; engine {engine!r} keeps its "
                        "study itself")
    space, settings, folder, request = _check(
        dataset, model_dir, search_space, objective, direction, trials, parallel_trials,
        study_dir, pruning, algorithm, sampler_seed, train_options or {}, engine,
        train_defaults)
    if gcp_resources:
        vertex_jobs.write_gcp_resources(gcp_resources)  # engine vertex names its job there
    if engine == "vertex":
        from tfkfp.components.tune import vertex_run

        if pruning:
            log.info("tune: engine vertex stops no trial early (pruning is the local and "
                     "katib engines')")
        return vertex_run.run(dataset, model_dir, settings, trials, parallel_trials,
                              engine_settings, gcp_resources=gcp_resources)
    if engine == "katib":
        from tfkfp.components.tune import katib_run

        return katib_run.run(dataset, model_dir, settings, trials, parallel_trials,
                             engine_settings)
    the_study = study.open_study(folder, settings, heartbeat_seconds)
    found = study.resume(the_study, heartbeat_seconds)
    todo = study.remaining(the_study, trials)
    log.info("tune: %d trial(s) to run, %d at a time", todo, parallel_trials)
    if todo:
        the_study.optimize(lambda t: run_trial(t, request, options.suggest(t, space)),
                           n_trials=todo, n_jobs=parallel_trials, catch=(TrialFailed,),
                           callbacks=[_progress(settings["objective"], todo)])
    return _result(the_study, request, folder, model_dir, settings,
                   resumed=any(found.values()))


def _check(dataset, model_dir, search_space, objective, direction, budget, parallel_trials,
           study_dir, pruning, algorithm, sampler_seed, train_options, engine="local",
           train_defaults=None):
    """Everything refused before the first trial: space, objective, budget, options; the
    settings name the algorithm as the engine does."""
    space, fixed = options.check_options(search_space, objective, direction, budget,
                                         parallel_trials, algorithm, train_options, engine,
                                         train_defaults)
    algorithm = engines.check_engine(engine, algorithm, space)
    objective, direction = options.check_objective(
        objective, direction, learned_task(dataset, model_dir, fixed))
    folder = study.check_study_dir(study_dir or os.path.join(model_dir, STUDY_FOLDER))
    settings = {"objective": objective, "direction": direction, "space": space,
                "algorithm": algorithm, "pruning": pruning, "seed": sampler_seed, "fixed": fixed}
    request = TrialRequest(dataset, os.path.join(folder, "trials"), objective, fixed,
                           parallel_trials)
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
