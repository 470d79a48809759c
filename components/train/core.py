"""train: a sharded Dataset in, a tfkfp SavedModel, metrics and a report out.

With launcher ``local`` (the default), a strategy that runs in one process trains in this
process and a multi-process one runs as a cluster of processes on this machine (the table in
common/training/strategies.py says which is which). The other launchers of the table in
launchers/ (``tfjob``, ``trainjob``, ``vertex``) run the same cluster shape as a Kubeflow
Training Operator TFJob, a Kubeflow Trainer v2 TrainJob or a Vertex AI CustomJob. Everything
is checked before any training starts (common/training/request.py, as diagnose_bottleneck
checks it).
"""

import dataclasses
import json
import os
import tempfile
import time
from typing import Any, Dict, Tuple

from tfkfp.components.common.platform import vertex_jobs
from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import (
    RESULT_FILE,
    TrainConfig,
    TrainConfigError,
)
from tfkfp.components.common.training.request import check_request, make_config
from tfkfp.components.common.training.shape import ClusterShape, validate
from tfkfp.components.train import launchers
from tfkfp.components.train.launchers import Launcher, job, local

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
        from tfkfp.components.train import report

        return report.markdown(self.figures)

    def charts(self):
        from tfkfp.components.train import report

        return report.charts(self.figures)

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
    """Train a classifier or a regressor (common/training/tasks.py) on a Dataset directory
    written by shard_tfrecords.

    ``options`` are the fields of :class:`TrainConfig` (strategy, model_name, epochs, ...);
    ``launcher_options`` those of :class:`job.LaunchOptions` for the cluster launchers.
    ``gcp_resources``, when given, is a file that names the Vertex AI CustomJob once launcher
    ``vertex`` has created it, and lists no resources otherwise (see
    common/platform/vertex_jobs.py).
    """
    # NumPy and TensorFlow: imported here, so that check_options refuses a typo in a second
    from tfkfp.components.train import checkpoint_record, loop

    config, launch = check_options(dataset, model_dir, launcher, launcher_options, **options)
    check_request(config)  # its Dataset and earlier model, as diagnose_bottleneck checks them
    if config.checkpoint_dir:  # refused here, before any process or cluster job starts
        checkpoint_record.check(config)
    if gcp_resources:
        vertex_jobs.write_gcp_resources(gcp_resources)  # the vertex launcher fills it in
    entry = launchers.get(launcher)
    if not entry.in_process:
        return _train_on_cluster(config, entry, launch, gcp_resources)
    strategy = strategies.get(config.strategy)
    strategy.preflight(config)  # fail before any work when, e.g., there is no TPU
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tfkfp-train-") as tmp:
        result_path = os.path.join(tmp, RESULT_FILE)
        if strategy.multi_process:
            local.run_cluster(config, result_path)
        else:
            loop.run(config, result_path)
        with open(result_path) as f:
            return _result(config, json.load(f), started)


def check_options(dataset: str, model_dir: str, launcher: str = "local",
                  launcher_options: Dict[str, Any] | None = None,
                  **options: Any) -> Tuple[TrainConfig, job.LaunchOptions]:
    """Everything about a train request that can be refused without reading the data:
    options, strategy and cluster shape, launcher and its options."""
    config = make_config(dataset, model_dir, options).with_vertex_dirs()
    validate(config, launchers.get(launcher).placement)
    return config, job.parse_options(launcher, launcher_options)


def _train_on_cluster(config: TrainConfig, launcher: Launcher, options: job.LaunchOptions,
                      gcp_resources: str = "") -> TrainResult:
    """Run the cluster as the launcher's job (a TFJob, a TrainJob, a Vertex AI CustomJob) on
    shared storage."""
    shape = ClusterShape.for_config(config)
    plan = job.plan(config, launcher.name, options)
    launcher.preflight(options)
    started = time.perf_counter()
    job.stage(plan)
    launcher.run(shape, plan, options, gcp_resources=gcp_resources)
    return _result(config, job.collect(plan), started)


def _result(config: TrainConfig, figures: Dict[str, Any], started: float) -> TrainResult:
    """The chief's figures with what only the caller knows: wall time and worker count."""
    figures["training_seconds"] = time.perf_counter() - started
    figures["workers"] = config.workers if strategies.get(config.strategy).multi_process else 1
    return TrainResult(config.model_dir, config, figures)


def warm_start_from(model_path: str, uri: str) -> str:
    """The earlier model to continue from: a Model artifact's path or a URI, at most one."""
    if model_path and uri:
        raise TrainConfigError(f"give warm_start_model ({model_path}) or warm_start_model_uri "
                               f"({uri}), not both")
    return model_path or uri
