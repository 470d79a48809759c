"""What a training run is asked to do, and the checks of its fields made before any work
starts. shape.validate checks the whole request: these fields, then the strategy and its
cluster shape against the table in strategies.py (which builds on this module); request.py
then checks it against its Dataset. TrainConfigError is what every one of them raises."""

import dataclasses
import importlib
import json
import os
from typing import Any, Dict, Tuple

from tfkfp.components.common.model import task_kinds
from tfkfp.components.common.platform import uris

MODELS = ("mlp", "cnn", "resnet50", "mobilenet_v2")
OPTIMIZERS = ("adam", "sgd", "rmsprop")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
# What the model learns (common.model.task_kinds' table; tasks.py): auto follows the label.
TASKS = ("auto", *task_kinds.names())
REGRESSION_LOSSES = task_kinds.kind("regression").losses
# The eval figures a target can be set on; True: higher is better.
HIGHER_IS_BETTER = {"accuracy": True, "r2": True, "rmse": False, "mae": False, "loss": False}
TARGET_METRICS = {k.name: k.target_metrics for k in task_kinds.TASK_KINDS.values()}
# What tf.io.gfile reads in the suite's image, besides local paths.
WARM_START_SCHEMES = ("gs://", "file://")
# The files of a training process, read by whoever started it (train's launchers, tune's
# trials): the TrainConfig it runs, its figures when it ends, and the per-epoch evaluation
# it keeps beside its checkpoints.
CONFIG_FILE, RESULT_FILE, HISTORY_FILE = "config.json", "result.json", "history.json"


class TrainConfigError(ValueError):
    """A training request that cannot run; raised before any training work."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Every knob of a training run. Paths may be local or remote (gs://...)."""

    dataset: str
    model_dir: str
    model_name: str = "mlp"
    model_fn: str = ""
    hidden_units: Tuple[int, ...] = (256, 128)
    strategy: str = "default"
    workers: int = 2
    parameter_servers: int = 1
    epochs: int = 5
    batch_size: int = 64
    global_batch_size: int = 0
    learning_rate: float = 1e-3
    optimizer: str = "adam"
    precision: str = "float32"
    jit_compile: bool = False
    steps_per_execution: int = 8  # per-step dispatch is a large share of a small model's step
    steps_per_epoch: int = 0
    eval_steps: int = 0
    cache: bool = False
    shuffle_buffer: int = 10_000
    checkpoint_dir: str = ""
    tensorboard_dir: str = ""
    warm_start: str = ""
    task: str = "auto"
    loss: str = ""
    target_metric: str = ""
    target_value: float = 0.0
    tpu: str = ""
    seed: int = 0

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        body = json.loads(text)
        body["hidden_units"] = tuple(body["hidden_units"])
        return cls(**body)

    def with_vertex_dirs(self) -> "TrainConfig":
        """Vertex AI's AIP_* directories, where set, take the place of the defaults."""
        env = os.environ
        return dataclasses.replace(
            self,
            model_dir=env.get("AIP_MODEL_DIR") or self.model_dir,
            checkpoint_dir=env.get("AIP_CHECKPOINT_DIR") or self.checkpoint_dir,
            tensorboard_dir=env.get("AIP_TENSORBOARD_LOG_DIR") or self.tensorboard_dir)


def check_fields(config: TrainConfig) -> None:
    """Refuse, with the allowed values, a field that would fail later in training (all but
    the strategy and its cluster shape: see shape.validate)."""
    _one_of("optimizer", config.optimizer, OPTIMIZERS)
    _one_of("precision", config.precision, PRECISIONS)
    if config.model_fn:
        load_model_fn(config.model_fn)
    else:
        _one_of("model_name", config.model_name, MODELS)
    _positive(config, "epochs", "batch_size", "steps_per_execution", "learning_rate")
    _not_negative(config, "global_batch_size", "steps_per_epoch", "eval_steps", "seed")
    _one_of("task", config.task, ("auto", *task_kinds.names()))
    _one_of("loss", config.loss or task_kinds.losses()[0], task_kinds.losses())
    _one_of("target_metric", config.target_metric or "accuracy", tuple(HIGHER_IS_BETTER))
    if config.target_metric == "accuracy" and not 0.0 <= config.target_value <= 1.0:
        raise TrainConfigError(f"target_value {config.target_value} is not an accuracy in "
                               "[0, 1]")
    check_warm_start_uri(config.warm_start)
    check_checkpoint_dir(config.checkpoint_dir)


def check_warm_start_uri(uri: str, name: str = "warm_start") -> None:
    """Refuse a warm-start location train cannot read (``name``: the parameter it came in)."""
    if uri and uris.is_remote(uri) and not uri.startswith(WARM_START_SCHEMES):
        raise TrainConfigError(
            f"{name} {uri!r}: train reads the earlier model with tf.io.gfile, which reads "
            f"local paths and {', '.join(s + '...' for s in WARM_START_SCHEMES)} URIs; copy "
            "the model there, or mount it and give its path")


def check_checkpoint_dir(uri: str) -> None:
    """TensorFlow writes checkpoints itself, and has no S3 filesystem."""
    if uri and not uris.tf_reads(uri):
        raise TrainConfigError(
            f"checkpoint_dir {uri!r}: TensorFlow writes checkpoints itself and cannot write "
            f"to an S3-compatible store; give a local path, a mounted volume or a gs:// URI")


def check_batch(config: TrainConfig, replicas: int) -> int:
    """The global batch: per-replica batch x replicas, or an explicit global_batch_size."""
    if not config.global_batch_size:
        return config.batch_size * replicas
    if config.global_batch_size < replicas:
        raise TrainConfigError(
            f"global_batch_size={config.global_batch_size} is smaller than the {replicas} "
            "replicas in sync: every replica needs at least one example per step")
    if config.global_batch_size % replicas:
        raise TrainConfigError(
            f"global_batch_size={config.global_batch_size} does not divide evenly over "
            f"{replicas} replicas; use a multiple of {replicas}")
    return config.global_batch_size


def load_model_fn(spec: str):
    """Import ``package.module:function``; the function builds an uncompiled model."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TrainConfigError(f"model_fn {spec!r} is not of the form 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # any import-time failure is the user's module's fault
        raise TrainConfigError(f"model_fn {spec!r}: cannot import {module_name!r}: "
                               f"{type(err).__name__}: {err}") from err
    function = getattr(module, attr, None)
    if not callable(function):
        raise TrainConfigError(f"model_fn {spec!r}: module {module_name!r} has no function "
                               f"{attr!r}")
    return function


def _one_of(field: str, value: Any, allowed) -> None:
    if value not in allowed:
        raise TrainConfigError(f"{field} {value!r} is not known; expected one of "
                               f"{', '.join(allowed)}")


def _positive(config: TrainConfig, *fields: str) -> None:
    for field in fields:
        if not getattr(config, field) > 0:
            raise TrainConfigError(f"{field} must be positive, got {getattr(config, field)}")


def _not_negative(config: TrainConfig, *fields: str) -> None:
    for field in fields:
        if getattr(config, field) < 0:
            raise TrainConfigError(f"{field} must not be negative, got {getattr(config, field)}")


def as_dict(config: TrainConfig) -> Dict[str, Any]:
    return dataclasses.asdict(config)
