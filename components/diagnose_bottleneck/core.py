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
from typing import Any, Dict, Sequence, Tuple

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.platform.cpus import tensorflow_threads
from tfkfp.components.common.training import strategies, tasks
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError
from tfkfp.components.common.training.request import check_request, make_config
from tfkfp.components.common.training.shape import validate
from tfkfp.components.diagnose_bottleneck import probe, report, verdict

IN_PROCESS = strategies.names(multi_process=False)  # the strategies this process can run
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


def diagnose_bottleneck(
    dataset: str,
    model_name: str = "mlp",
    model_fn: str = "",
    hidden_units: Sequence[int] | str = (256, 128),
    batch_size: int = 64,
    strategy: str = "default",
    precision: str = "float32",
    cache: bool = False,
    memory_limit_mb: int = 0,
    seconds: float = 3.0,
    task: str = "auto",
) -> BottleneckResult:
    """Diagnose what bounds training on a Dataset directory written by shard_tfrecords.

    Args:
        dataset: the Dataset directory (its train split is measured).
        model_name: mlp, cnn, resnet50 or mobilenet_v2, as in train.
        model_fn: ``package.module:function`` building the model instead, as in train.
        hidden_units: sizes of the dense layers on top (a sequence or "256,128").
        batch_size: examples per replica per step.
        strategy: one that runs in this process: default, one_device, mirrored or tpu.
        precision: float32, mixed_float16 or mixed_bfloat16.
        cache: measure with train's in-memory cache of the records, filled first.
        memory_limit_mb: the memory training may use, in MB; 0 is what the host has
            available (the pod's cgroup limit where lower), or a GPU's memory.
        seconds: wall time for each measurement (each runs at least a few steps).
        task: auto, classification or regression, as in train.
    """
    started = time.perf_counter()
    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    config = make_config(dataset, "", dict(
        model_name=model_name, model_fn=model_fn, hidden_units=hidden_units,
        batch_size=batch_size, strategy=strategy, precision=precision, cache=cache, task=task))
    _check(config, memory_limit_mb, seconds)
    # train's own checks of its Dataset; the label read as train reads it (classes or values)
    schema, resolved = check_request(config, splits=("train",),
                                     consequence="there is no training step to diagnose")
    records = Manifest.load(dataset).records("train")
    figures = probe.run(config, tasks.training_schema(schema, resolved), records,
                        memory_limit_mb, seconds)
    figures.update(model=config.model_fn or config.model_name, strategy=strategy,
                   batch_size=batch_size, precision=precision, cache=cache,
                   diagnosis_seconds=time.perf_counter() - started)
    found, summary = verdict.decide(figures)
    return BottleneckResult(found, summary, tuple(verdict.remedies(found, figures)), figures,
                            config)


def _check(config: TrainConfig, memory_limit_mb: int, seconds: float) -> None:
    validate(config)
    if config.strategy not in IN_PROCESS:
        raise TrainConfigError(
            f"strategy {config.strategy!r} runs as several processes, which diagnose_bottleneck "
            f"does not start; expected one of {', '.join(IN_PROCESS)} (diagnose one worker's "
            "step with 'default' or 'mirrored')")
    strategies.get(config.strategy).preflight(config)  # e.g. no TPU: fail before measuring
    if memory_limit_mb < 0:
        raise TrainConfigError(f"memory_limit_mb must be 0 (what the host has) or positive, "
                               f"got {memory_limit_mb}")
    if not seconds > 0:
        raise TrainConfigError(f"seconds must be positive, got {seconds}")
