"""A training request's checks, shared by train and diagnose_bottleneck: its options made
one TrainConfig (``make_config``), then, once ``shape.validate`` has passed its fields,
strategy and cluster shape, what its Dataset and an earlier model must allow
(``check_request``): the task the label allows, resolved once, with its target and loss, the
features, records in the splits it reads, and a warm start's model. Nothing here trains: a
request refused here costs no work."""

import dataclasses
from typing import Any, Dict, Sequence, Tuple

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.model import savedmodel, task_kinds
from tfkfp.components.common.platform import uris
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError

SPLITS = ("train", "eval")  # train learns from one and measures on the other


def make_config(dataset: str, model_dir: str, options: Dict[str, Any]) -> TrainConfig:
    """The TrainConfig of a request's ``options`` (its fields but dataset and model_dir);
    an unknown option is refused naming the known ones, and ``hidden_units`` may be a
    sequence or text such as ``"256,128"``."""
    known = {f.name for f in dataclasses.fields(TrainConfig)} - {"dataset", "model_dir"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TrainConfigError(f"unknown training option(s) {unknown}; allowed: "
                               f"{', '.join(sorted(known))}")
    if "hidden_units" in options:
        options = {**options, "hidden_units": hidden_units(options["hidden_units"])}
    return TrainConfig(dataset=dataset, model_dir=model_dir, **options)


def hidden_units(value: Sequence[int] | str) -> Tuple[int, ...]:
    """Dense layer sizes from a sequence or text such as ``"256,128"`` (as a KFP component
    passes them)."""
    if not isinstance(value, str):
        return tuple(value)
    try:
        return tuple(int(u) for u in value.replace(" ", "").split(",") if u)
    except ValueError as err:
        raise TrainConfigError(f"hidden_units {value!r} is not a comma-separated list of "
                               "integers, e.g. '256,128'") from err


def check_request(config: TrainConfig, splits: Sequence[str] = SPLITS,
                  consequence: str = "") -> Tuple[Schema, str]:
    """Refuse, before any work, a request its Dataset or earlier model cannot serve; return
    the Dataset's schema and the task its label allows (``config.task`` resolved).

    ``splits``: those that must hold records (diagnose_bottleneck reads only ``train``).
    ``consequence``: said after the reason when the label allows no task, e.g. "there is no
    training step to diagnose"."""
    manifest = Manifest.load(config.dataset)  # says what is missing from a non-Dataset folder
    schema = Schema.load(config.dataset)
    task = _check_schema(config, schema, consequence)
    _check_splits(config.dataset, manifest, splits)
    _check_remote_readers(config, manifest)
    if config.warm_start:
        _check_warm_start(config, schema, task)
    return schema, task


def _check_schema(config: TrainConfig, schema: Schema, consequence: str) -> str:
    """The task the label allows, the target's metric and the features."""
    from tfkfp.components.common.training import tasks  # NumPy: make_config stays light

    try:
        task = tasks.resolve(schema, config.task)
        tasks.check_target(task, config.target_metric)
        tasks.check_loss(task, config.loss)
    except SchemaError as err:
        raise SchemaError(f"{config.dataset}: {err}"
                          + (f"; {consequence}" if consequence else "")) from err
    if not schema.features:
        raise SchemaError(f"{config.dataset}: the schema has no feature columns")
    return task


def _check_remote_readers(config: TrainConfig, manifest: Manifest) -> None:
    """Shards TensorFlow cannot read itself (s3://, minio://) come through the fetch cache,
    a tf.py_function: it runs only in the process that built the dataset, and
    parameter_server's workers run the dataset in their own processes."""
    if config.strategy != "parameter_server":
        return
    fetched = sorted(f for split in manifest.splits
                     for f in manifest.shard_files(split, check=False) if not uris.tf_reads(f))
    if fetched:
        raise TrainConfigError(
            f"{config.dataset}: strategy 'parameter_server' runs the input pipeline on its "
            f"workers, which cannot fetch shards from {fetched[0].split('://')[0]}:// "
            f"({fetched[0]} and {len(fetched) - 1} more); shard with data_root=inside or a "
            "gs:// data root, or train with multi_worker_mirrored")


def _check_splits(data: str, manifest: Manifest, splits: Sequence[str]) -> None:
    """Each split read needs records: one to learn from, one to measure accuracy on."""
    for split in splits:
        if manifest.records(split) == 0:
            raise SchemaError(f"{data}: the {split} split has no records, so there is nothing "
                              f"to {'learn from' if split == 'train' else 'evaluate on'}; shard "
                              "more rows, or change eval_fraction (or the split column)")


def _check_warm_start(config: TrainConfig, schema: Schema, task: str) -> None:
    """The earlier model must be train's, for the same task, classes and model."""
    where = config.warm_start
    weights = uris.join(where, savedmodel.WEIGHTS_PREFIX + ".index")
    if not uris.exists(weights):
        raise TrainConfigError(f"warm_start {where}: there are no weights at {weights}; give "
                               "the model folder an earlier train run wrote")
    earlier_task = savedmodel.model_task(where)
    if earlier_task != task:
        raise TrainConfigError(f"warm_start {where}: it is a {earlier_task} model; this run "
                               f"is {task}: a model continues only on the same task")
    answers_classes = task_kinds.kind(task).classes
    classes = savedmodel.label_names(schema) if answers_classes else []
    earlier = savedmodel.load_labels(where) if answers_classes else []
    if earlier != classes:
        raise TrainConfigError(f"warm_start {where}: its classes {earlier} are not the "
                               f"dataset's {classes}; a model continues only on the same "
                               "classes, in the same order")
    built = savedmodel.load_metadata(where).get("model")
    wanted = config.model_fn or config.model_name
    if built and built != wanted:
        raise TrainConfigError(f"warm_start {where}: it is a {built!r} model, not {wanted!r}; "
                               "set model_name (or model_fn) to the earlier model's")
