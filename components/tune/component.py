"""KFP component: tune train's settings with a local Optuna study, a Katib Experiment or a
Vertex AI HyperparameterTuningJob (see core.tune)."""

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Markdown, Metrics, Model, Output

from tfkfp.components._image import IMAGE
from tfkfp.components.common.platform.signals import exec_python


@exec_python  # a cancelled step's SIGTERM reaches Python; its trial processes follow it
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def tune(
    dataset: Input[Dataset],
    model: Output[Model],
    best_settings: Output[Artifact],
    metrics: Output[Metrics],
    report: Output[Markdown],
    gcp_resources: dsl.OutputPath(str),
    search_space: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    objective: str = "",
    direction: str = "auto",
    trials: int = 8,
    parallel_trials: int = 1,
    study_dir: str = "",
    pruning: bool = True,
    algorithm: str = "tpe",
    sampler_seed: int = 0,
    train_options: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    engine: str = "local",
    engine_options: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    train_defaults: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
):
    """Tunes train's settings locally, on Katib or on Vertex AI; outputs the best model.

    Args:
        dataset: Sharded Dataset from shard_tfrecords (train and eval splits, schema).
        model: Output SavedModel of the best trial, as train writes it (freeze_quantize,
            export_tflite and deploy_model take it unchanged).
        best_settings: Output JSON file of the best trial's train settings.
        metrics: Output best objective and trials done, pruned and failed.
        report: Output Markdown report: the best trial and every trial's settings,
            objective, state, seconds and why it stopped.
        gcp_resources: Output naming the Vertex AI HyperparameterTuningJob of engine
            vertex, by which KFP's UI links it and a cancelled run cancels it (no
            resources for the other engines).
        search_space: Setting -> {"type": "float" or "int", "low", "high", "log"} or
            {"type": "categorical", "choices": [...]}; settings: learning_rate,
            batch_size, epochs, hidden_units, optimizer, model_name. Empty: the default
            space (learning rate, batch size, hidden units, optimizer).
        objective: The eval figure optimised: eval_accuracy or eval_loss (classification),
            eval_rmse, eval_mae, eval_r2 or eval_loss (regression); empty: eval_accuracy
            or eval_rmse.
        direction: maximize, minimize or auto (the objective's own).
        trials: Trial budget of the study, trials of earlier runs with this study_dir
            included.
        parallel_trials: Trials run at a time, sharing the step's cores.
        study_dir: A path on a volume that outlives the step (SQLite): a rerun with the
            same study_dir resumes the study. Empty: inside the output model (no resume).
        pruning: Stop trials whose per-epoch evaluation trails the median of earlier trials.
        algorithm: tpe (Bayesian; local, katib), random, grid (categorical settings
            only), or bayesianoptimization (katib, vertex).
        sampler_seed: The sampler's random seed; 0 for none (train's own seed goes in
            train_options).
        train_options: Train settings every trial shares, e.g. {"epochs": 5,
            "model_name": "mlp"} (train's parameters; not those searched).
        engine: local (trials in this step's pod), katib (a Katib Experiment on the
            cluster; trials as batch Jobs, or TrainJobs for a multi-worker strategy) or
            vertex (a Vertex AI HyperparameterTuningJob; trials as CustomJobs). Remote
            trials run in the suite's image.
        engine_options: katib: namespace, image, service_account, cpu, memory, gpus,
            volume_claim, mount_path, trials_dir (shared; default beside the model),
            runtime (multi-worker trials), experiment_name, poll_seconds,
            deadline_seconds. vertex: project, region,
            image, service_account, machine_type, gpu_type, gpus, trials_dir (gs://),
            display_name, poll_seconds, deadline_seconds.
        train_defaults: Train settings for what neither search_space nor train_options
            sets: the training pipeline passes its own (a searched setting overrides its
            default).
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import json
    import logging

    from tfkfp.components.tune.core import tune as run_tuning
    from tfkfp.components.tune.options import TuneOptions

    logging.basicConfig(level=logging.INFO)
    options = TuneOptions.of(settings)  # its parameters are its settings, by the same names
    result = run_tuning(dataset.path, model.path, options, gcp_resources=gcp_resources)
    model.metadata.update({"framework": "tensorflow", "tuned": True, **result.best_metrics})
    for name, value in result.metrics().items():
        metrics.log_metric(name, value)
    with open(best_settings.path, "w") as f:
        json.dump(result.best_settings, f, indent=2)
    with open(report.path, "w") as f:
        f.write(result.markdown())


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def train_settings(model_name: str, model_fn: str, hidden_units: str, strategy: str,
                   workers: int, parameter_servers: int, tpu: str, epochs: int,
                   batch_size: int, learning_rate: float, precision: str, task: str,
                   loss: str, target_metric: str, target_value: float) -> dict:
    """The training pipeline's train settings as one dict, tune's train_defaults (a KFP
    backend may not fill pipeline parameters into a dict a pipeline writes).

    Args:
        model_name: train's model_name.
        model_fn: train's model_fn.
        hidden_units: train's hidden_units.
        strategy: train's strategy.
        workers: train's workers.
        parameter_servers: train's parameter_servers.
        tpu: train's tpu.
        epochs: train's epochs.
        batch_size: train's batch_size.
        learning_rate: train's learning_rate.
        precision: train's precision.
        task: train's task.
        loss: train's loss.
        target_metric: train's target_metric.
        target_value: train's target_value.

    Returns:
        The settings by name, as tune's train_defaults takes them.
    """
    return dict(locals())
