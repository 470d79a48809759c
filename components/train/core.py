"""train: a sharded Dataset in, a tfkfp SavedModel, metrics and a report out.

With launcher ``local`` (the default), a strategy that runs in one process trains in this
process and a multi-process one runs as a cluster of processes on this machine (the table in
strategies.py says which is which). Launchers ``tfjob``, ``trainjob`` and ``vertex`` run the
same cluster shape as a Kubeflow Training Operator TFJob, a Kubeflow Trainer v2 TrainJob or a
Vertex AI CustomJob (see launchers/). Everything is checked before any training starts.
"""

import dataclasses
import json
import os
import tempfile
import time
from typing import Any, Dict, Tuple

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.platform import uris, vertex_jobs
from tfkfp.components.train import checkpoint_record, loop, report, strategies, tasks
from tfkfp.components.train.config import TrainConfig
from tfkfp.components.train.errors import TrainConfigError
from tfkfp.components.train.launchers import job, kube, local, tfjob, trainjob, vertex
from tfkfp.components.train.shape import ClusterShape, validate

CLUSTER_LAUNCHERS = {"tfjob": tfjob, "trainjob": trainjob, "vertex": vertex}
METRICS = ("eval_accuracy", "eval_rmse", "eval_mae", "eval_r2", "eval_loss",
           "examples_per_second", "mean_step_ms",
           "input_wait_fraction", "seconds_to_target", "training_seconds", "parameters")


@dataclasses.dataclass(frozen=True)
class TrainResult:
    model_dir: str
    config: TrainConfig
    figures: Dict[str, Any]

    @property
    def history(self) -> Dict[str, list]:
        return self.figures["history"]

    def metrics(self) -> Dict[str, float]:
        """The figures for KFP ``Metrics`` (those measured in this run)."""
        return {k: float(self.figures[k]) for k in METRICS if self.figures.get(k) is not None}

    def metadata(self) -> Dict[str, Any]:
        return {"framework": "tensorflow", "model": self.config.model_fn or self.config.model_name,
                "task": self.figures.get("task", "classification"),
                "strategy": self.config.strategy, "replicas": self.figures["replicas"],
                "workers": self.figures["workers"],
                "global_batch_size": self.figures["global_batch_size"],
                "signatures": ["serving_default", "serving_raw"],
                "resumed_after_epoch": self.figures["initial_epoch"], **self.metrics(),
                **({"warm_started_from": self.config.warm_start} if self.config.warm_start
                   else {})}

    def markdown(self) -> str:
        return report.markdown(self.figures)

    def classification(self) -> Dict[str, Any] | None:
        """The eval split's confusion matrix and ROC curve (common.model.classification's summary)
        for KFP's ClassificationMetrics; None from a chief that did not report one."""
        return self.figures.get("classification")

    def regression(self) -> Dict[str, Any] | None:
        """A regressor's predicted and actual values on the eval split (common.model.regression's
        summary); None for a classifier."""
        return self.figures.get("regression")


def train(dataset: str, model_dir: str, launcher: str = "local",
          launcher_options: Dict[str, Any] | None = None, gcp_resources: str = "",
          **options: Any) -> TrainResult:
    """Train a classifier or a regressor (tasks.py) on a Dataset directory written by
    shard_tfrecords.

    ``options`` are the fields of :class:`TrainConfig` (strategy, model_name, epochs, ...);
    ``launcher_options`` those of :class:`job.LaunchOptions` for the cluster launchers.
    ``gcp_resources``, when given, is a file that names the Vertex AI CustomJob once launcher
    ``vertex`` has created it, and lists no resources otherwise (see
    common/platform/vertex_jobs.py).
    """
    config, launch = check_request(dataset, model_dir, launcher, launcher_options, **options)
    _check_schema(config)
    _check_splits(config.dataset)
    if config.warm_start:
        _check_warm_start(config)
    if config.checkpoint_dir:  # refused here, before any process or cluster job starts
        checkpoint_record.check(config)
    if gcp_resources:
        vertex_jobs.write_gcp_resources(gcp_resources)  # the vertex launcher fills it in
    if launcher != "local":
        return _train_on_cluster(config, launcher, launch, gcp_resources)
    strategy = strategies.get(config.strategy)
    strategy.preflight(config)  # fail before any work when, e.g., there is no TPU
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tfkfp-train-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        if strategy.multi_process:
            local.run_cluster(config, result_path)
        else:
            loop.run(config, result_path)
        with open(result_path) as f:
            return _result(config, json.load(f), started)


def check_request(dataset: str, model_dir: str, launcher: str = "local",
                  launcher_options: Dict[str, Any] | None = None,
                  **options: Any) -> Tuple[TrainConfig, job.LaunchOptions]:
    """Everything about a train request that can be refused without reading the data:
    options, strategy and cluster shape, launcher and its options."""
    config = _config(dataset, model_dir, options)
    validate(config, launcher)
    return config, job.parse_options(launcher, launcher_options)


def _train_on_cluster(config: TrainConfig, launcher: str, options: job.LaunchOptions,
                      gcp_resources: str = "") -> TrainResult:
    """Run the cluster as a TFJob, a TrainJob or a Vertex AI CustomJob on shared storage."""
    shape = ClusterShape.for_config(config)
    plan = job.plan(config, launcher, options)
    if launcher in job.KUBE:
        kube.check_allowed(options)
    started = time.perf_counter()
    job.stage(plan)
    if launcher == "vertex":
        vertex.run(shape, plan, options, gcp_resources=gcp_resources)
    else:
        CLUSTER_LAUNCHERS[launcher].run(shape, plan, options)
    return _result(config, job.collect(plan), started)


def _result(config: TrainConfig, figures: Dict[str, Any], started: float) -> TrainResult:
    """The chief's figures with what only the caller knows: wall time and worker count."""
    figures["training_seconds"] = time.perf_counter() - started
    figures["workers"] = config.workers if strategies.get(config.strategy).multi_process else 1
    return TrainResult(config.model_dir, config, figures)


def _config(dataset: str, model_dir: str, options: Dict[str, Any]) -> TrainConfig:
    known = {f.name for f in dataclasses.fields(TrainConfig)} - {"dataset", "model_dir"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TrainConfigError(f"unknown training option(s) {unknown}; allowed: "
                               f"{', '.join(sorted(known))}")
    if isinstance(options.get("hidden_units"), str):
        options = {**options, "hidden_units": _units(options["hidden_units"])}
    elif "hidden_units" in options:
        options = {**options, "hidden_units": tuple(options["hidden_units"])}
    return TrainConfig(dataset=dataset, model_dir=model_dir, **options).with_vertex_dirs()


def _units(text: str):
    try:
        return tuple(int(u) for u in text.replace(" ", "").split(",") if u)
    except ValueError as err:
        raise TrainConfigError(f"hidden_units {text!r} is not a comma-separated list of "
                               "integers, e.g. '256,128'") from err


def _check_schema(config: TrainConfig) -> None:
    """The task the label allows, the target's metric and the features, before any work."""
    schema = Schema.load(config.dataset)
    try:
        task = tasks.resolve(schema, config.task)
        tasks.check_target(task, config.target_metric)
        tasks.check_loss(task, config.loss)
    except SchemaError as err:
        raise SchemaError(f"{config.dataset}: {err}") from err
    if not schema.features:
        raise SchemaError(f"{config.dataset}: the schema has no feature columns")


def _check_splits(data: str) -> None:
    """Both splits need records: one to learn from, one to measure accuracy on."""
    manifest = Manifest.load(data)
    for split in ("train", "eval"):
        if manifest.records(split) == 0:
            raise SchemaError(f"{data}: the {split} split has no records, so there is nothing "
                              f"to {'learn from' if split == 'train' else 'evaluate on'}; shard "
                              "more rows, or change eval_fraction (or the split column)")


def warm_start_from(model_path: str, uri: str) -> str:
    """The earlier model to continue from: a Model artifact's path or a URI, at most one."""
    if model_path and uri:
        raise TrainConfigError(f"give warm_start_model ({model_path}) or warm_start_model_uri "
                               f"({uri}), not both")
    return model_path or uri


def _check_warm_start(config: TrainConfig) -> None:
    """The earlier model must be train's, for the same classes and model, before any work."""
    where = config.warm_start
    weights = uris.join(where, savedmodel.WEIGHTS_PREFIX + ".index")
    if not uris.exists(weights):
        raise TrainConfigError(f"warm_start {where}: there are no weights at {weights}; give "
                               "the model folder an earlier train run wrote")
    schema = Schema.load(config.dataset)
    task = tasks.resolve(schema, config.task)
    earlier_task = savedmodel.model_task(where)
    if earlier_task != task:
        raise TrainConfigError(f"warm_start {where}: it is a {earlier_task} model; this run "
                               f"is {task}: a model continues only on the same task")
    classes = savedmodel.label_names(schema) if task == "classification" else []
    earlier = savedmodel.load_labels(where) if task == "classification" else []
    if earlier != classes:
        raise TrainConfigError(f"warm_start {where}: its classes {earlier} are not the "
                               f"dataset's {classes}; a model continues only on the same "
                               "classes, in the same order")
    built = savedmodel.load_metadata(where).get("model")
    wanted = config.model_fn or config.model_name
    if built and built != wanted:
        raise TrainConfigError(f"warm_start {where}: it is a {built!r} model, not {wanted!r}; "
                               "set model_name (or model_fn) to the earlier model's")
