"""diagnose_bottleneck: is training bound by its input, its compute or its memory?

On the same machine and data, with the model, batch, strategy and precision train would use,
it measures the input pipeline alone (raw records read cold, then train's own parsing
pipeline), the training step alone on batches held in memory, and both together; it sets
the step's memory need (parameters, gradients, optimizer slots, activations from the layers'
output shapes, the input batch, a cache) against the budget. The verdict comes with the
numbers behind it and remedies ranked by what they address, naming the tfkfp knob to set.
"""

import dataclasses
import time
from typing import Any, Dict, Tuple

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.platform.cpus import tensorflow_threads
from tfkfp.components.common.training import strategies, tasks
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.request import check_request, make_config
from tfkfp.components.common.training.shape import validate
from tfkfp.components.diagnose_bottleneck import probe, report, verdict
from tfkfp.components.diagnose_bottleneck.options import DiagnoseOptions

METRICS = ("input_records_per_second", "input_mb_per_second", "read_records_per_second",
           "read_mb_per_second", "compute_records_per_second", "combined_records_per_second",
           "input_wait_fraction", "step_ms", "parameters", "parameter_mb", "activation_mb",
           "step_memory_mb", "memory_budget_mb", "peak_rss_mb", "largest_fitting_batch",
           "diagnosis_seconds")


@dataclasses.dataclass(frozen=True)
class BottleneckResult:
    verdict: str  # verdict.INPUT, COMPUTE or MEMORY
    summary: str  # the numbers that justify the verdict, in one sentence
    remedies: Tuple[verdict.Remedy, ...]  # most effective first
    figures: Dict[str, Any]
    config: TrainConfig

    def metrics(self) -> Dict[str, float]:
        """The figures for KFP ``Metrics`` (those measured in this run)."""
        return {k: float(self.figures[k]) for k in METRICS if self.figures.get(k) is not None}

    def metadata(self) -> Dict[str, Any]:
        return {"verdict": self.verdict, "summary": self.summary,
                "remedies": [r.text() for r in self.remedies],
                "model": self.figures["model"], "strategy": self.config.strategy,
                "batch_size": self.config.batch_size, "precision": self.config.precision,
                "cache": self.config.cache, **self.metrics()}

    def markdown(self) -> str:
        return report.markdown(self.verdict, self.summary,
                               [r.text() for r in self.remedies], self.figures)

    def charts(self):
        return report.charts(self.figures)


def diagnose_bottleneck(dataset: str, options: DiagnoseOptions | None = None,
                        **settings) -> BottleneckResult:
    """Diagnose what bounds training on a Dataset directory written by shard_tfrecords.

    Args:
        dataset: the Dataset directory (its train split is measured).
        options: what to measure (options.DiagnoseOptions: the model, batch, strategy,
            precision, cache and task train would use, with train's defaults and choices,
            the memory budget and each measurement's seconds); or give its settings as
            keywords, e.g. ``batch_size=256, hidden_units="256,128"``.
    """
    started = time.perf_counter()
    options = DiagnoseOptions.given(options, settings)
    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    config = make_config(dataset, "", options.training())
    _check(config)
    # train's own checks of its Dataset; the label read as train reads it (classes or values)
    schema, resolved = check_request(config, splits=("train",),
                                     consequence="there is no training step to diagnose")
    records = Manifest.load(dataset).records("train")
    figures = probe.run(config, tasks.training_schema(schema, resolved), records,
                        options.memory_limit_mb, options.seconds)
    figures.update(model=config.model_fn or config.model_name, strategy=options.strategy,
                   batch_size=options.batch_size, precision=options.precision,
                   cache=options.cache,
                   diagnosis_seconds=time.perf_counter() - started)
    found, summary = verdict.decide(figures)
    return BottleneckResult(found, summary, tuple(verdict.remedies(found, figures)), figures,
                            config)


def _check(config: TrainConfig) -> None:
    """What DiagnoseOptions cannot check without TensorFlow: train's whole check of the
    request (a model_fn imported), and what the strategy runs on (e.g. no TPU)."""
    validate(config)
    strategies.get(config.strategy).preflight(config)  # e.g. no TPU: fail before measuring
