"""The tuning pipeline: a Dataset by URI, then tune (a study over train's settings, run
locally, on Katib or on Vertex AI).

The Dataset comes in through ``dsl.importer`` (shard it with the training pipeline or
``tfkfp shard``). tune's model is a SavedModel as train writes it, so the edge export and
serving pipelines take it unchanged.
"""

from typing import Any, Dict, NamedTuple

from kfp import dsl

from tfkfp.components.tune.component import tune
from tfkfp.pipelines import checks
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import defaults_of

DEFAULTS = defaults_of(tune)  # a parameter's default is the step's: step_defaults.py


class Outputs(NamedTuple):
    model: dsl.Model
    best_settings: dsl.Artifact


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-tuning",
              description="Tune train's settings on a Dataset with a local Optuna study that "
                          "prunes and resumes, a Katib Experiment or a Vertex AI tuning job; "
                          "output the best trial's model.")
def tuning(
    dataset_uri: str,
    search_space: dict = DEFAULTS.search_space,
    objective: str = DEFAULTS.objective,
    direction: str = DEFAULTS.direction,
    trials: int = DEFAULTS.trials,
    parallel_trials: int = DEFAULTS.parallel_trials,
    study_dir: str = DEFAULTS.study_dir,
    pruning: bool = DEFAULTS.pruning,
    algorithm: str = DEFAULTS.algorithm,
    sampler_seed: int = DEFAULTS.sampler_seed,
    train_options: dict = DEFAULTS.train_options,
    engine: str = DEFAULTS.engine,
    engine_options: dict = DEFAULTS.engine_options,
) -> Outputs:
    """Tunes train's settings on a Dataset and outputs the best trial's model.

    Args:
        dataset_uri: A sharded Dataset directory (gs:// on a cluster) from shard_tfrecords.
        search_space: Setting -> {"type": "float" or "int", "low", "high", "log"} or
            {"type": "categorical", "choices": [...]}; settings: learning_rate,
            batch_size, epochs, hidden_units, optimizer, model_name. Empty: the default.
        objective: eval_accuracy or eval_loss (classification), eval_rmse, eval_mae,
            eval_r2 or eval_loss (regression); empty: eval_accuracy or eval_rmse.
        direction: maximize, minimize or auto (the objective's own).
        trials: Trial budget of the study, earlier runs' trials in study_dir included.
        parallel_trials: Trials run at a time, sharing the step's cores.
        study_dir: A path on a volume that outlives the step: a rerun resumes the study
            there. Empty: inside the output model (no resume).
        pruning: Stop trials whose per-epoch evaluation trails the median.
        algorithm: tpe, random, grid (categorical settings only), or
            bayesianoptimization (katib, vertex).
        sampler_seed: The sampler's random seed; 0 for none (train's own seed goes in
            train_options).
        train_options: Train settings every trial shares, e.g. {"epochs": 5}.
        engine: local (trials in the step's pod), katib (a Katib Experiment on the
            cluster) or vertex (a Vertex AI HyperparameterTuningJob).
        engine_options: katib or vertex: where trials run (namespace or project, image,
            trials_dir, resources, ...; see the tune component).

    Returns:
        model: The best trial's SavedModel, as train writes it.
        best_settings: A JSON file of the best trial's train settings.
    """
    data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset, reimport=False)
    tuned = tune(dataset=data.output, search_space=search_space, objective=objective,
                 direction=direction, trials=trials, parallel_trials=parallel_trials,
                 study_dir=study_dir, pruning=pruning, algorithm=algorithm,
                 sampler_seed=sampler_seed,
                 train_options=train_options, engine=engine, engine_options=engine_options)
    return Outputs(model=tuned.outputs["model"], best_settings=tuned.outputs["best_settings"])


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse, before a run, what tune refuses without reading the Dataset: the search
    space, objective, direction, budget, engine, algorithm and shared train options."""
    from tfkfp.components.tune.options import TuneOptions

    given = checks.fed(tuning, tune, checks.with_defaults(tuning, arguments))
    checks.check_step(tune, TuneOptions, given)  # its engine_options too (remote_options)
