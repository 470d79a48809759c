"""The training run inside one process: the only process of an in-process strategy, or one
task (chief/coordinator or worker) of a multi-process cluster described by ``TF_CONFIG``.

One way for every strategy: tf_keras ``Model.fit`` over a ``DatasetCreator`` (which the
parameter-server strategy requires and the others accept), epoch checkpoints through a
``tf.train.CheckpointManager``, and evaluation of the eval split after every epoch.
"""

import json
import logging
import os
import shutil
import tempfile
from typing import Any, Dict

from tfkfp.components.common.data.damage import shards_named_on_data_loss
from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import tensorflow_threads
from tfkfp.components.common.training import models, strategies, tasks
from tfkfp.components.common.training.config import HISTORY_FILE, TrainConfig, check_batch
from tfkfp.components.train import checkpoint_record
from tfkfp.components.train.callbacks import (
    EpochCheckpoint,
    EpochProgress,
    EpochTimer,
    Evaluation,
    NanGuard,
    StepNanGuard,
    load_history,
)
from tfkfp.components.train.errors import CheckpointMismatch

log = logging.getLogger("tfkfp")


def run(config: TrainConfig, result_path: str) -> Dict[str, Any] | None:
    """Train as this process's task; the chief exports the model and writes the result.
    A damaged shard fails the run naming it (TensorFlow's own error gives only an offset)."""
    with shards_named_on_data_loss(config.dataset):
        return _run(config, result_path)


def _run(config: TrainConfig, result_path: str) -> Dict[str, Any] | None:
    import tf_keras

    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    cluster_task = strategies.current_cluster_task()  # TF_CONFIG's; task: what the model learns
    chief = strategies.is_chief(cluster_task)
    if config.precision != "float32":
        tf_keras.mixed_precision.set_global_policy(config.precision)
    tf_keras.utils.set_random_seed(config.seed)
    strategy = strategies.make_strategy(config)
    schema, task = models.task_for(config, Schema.load(config.dataset))
    target_metric = tasks.check_target(task.name, config.target_metric)
    replicas = strategy.num_replicas_in_sync
    global_batch = check_batch(config, replicas)
    train_records = Manifest.load(config.dataset).records("train")
    steps = config.steps_per_epoch or max(1, train_records // global_batch)
    model = _compiled_model(config, schema, strategy, task)
    scratch = tempfile.mkdtemp(prefix="tfkfp-train-")
    try:
        checkpoint_dir = config.checkpoint_dir or os.path.join(scratch, "checkpoints")
        manager, epoch_var, initial_epoch = _checkpoints(model, config, checkpoint_dir, chief,
                                                         scratch)
        timer = EpochTimer(steps, global_batch)
        evaluation = Evaluation(_eval_dataset(config, schema), task, timer, target_metric,
                                config.target_value)
        history_path = uris.join(checkpoint_dir, HISTORY_FILE)
        history = load_history(history_path, initial_epoch)
        guard = StepNanGuard if strategies.get(config.strategy).batch_callbacks else NanGuard
        callbacks = [timer, guard(config.checkpoint_dir if chief else None), evaluation,
                     EpochCheckpoint(manager, epoch_var, history, history_path if chief else None)]
        callbacks += [EpochProgress(config.epochs, initial_epoch)] if chief else []
        if config.tensorboard_dir:
            logs = config.tensorboard_dir if chief else os.path.join(scratch, "tensorboard")
            callbacks.append(tf_keras.callbacks.TensorBoard(logs, profile_batch=0))
        if initial_epoch:
            log.info("resuming from the checkpoint of epoch %d in %s", initial_epoch,
                     checkpoint_dir)
        if initial_epoch < config.epochs:
            model.fit(_train_input(config, schema, global_batch), epochs=config.epochs,
                      initial_epoch=initial_epoch, steps_per_epoch=steps, callbacks=callbacks,
                      verbose=2 if chief else 0)
        evaluation.set_model(model)  # fit sets it, but a finished run's rerun skips fit
        final = evaluation.evaluate() if initial_epoch >= config.epochs else {
            k: v[-1] for k, v in history.items() if k.startswith("val_")}
        wait = None if strategies.get(config.strategy).multi_process else _input_wait(
            model, strategy, config, schema, global_batch)
        result = {
            "history": history, "initial_epoch": initial_epoch, "epochs": config.epochs,
            "steps_per_epoch": steps, "global_batch_size": global_batch, "replicas": replicas,
            "strategy": config.strategy, "parameters": int(model.count_params()),
            "checkpoint_dir": checkpoint_dir, "task": task.name,
            **{"eval_" + k[len("val_"):]: v for k, v in final.items()},
            "input_wait_fraction": wait, "target_metric": target_metric,
            "seconds_to_target": evaluation.seconds_to_target, **timer.figures()}
        if chief:  # the eval split's report for the KFP UI, under the task's name
            result[task.name] = task.eval_report(evaluation, schema)
        export_dir = config.model_dir if chief else os.path.join(scratch, "model")
        savedmodel.export_model(model, schema, export_dir, _model_metadata(config, result),
                                task=task.name)
        if chief:
            uris.write_text_atomic(result_path, json.dumps(result, indent=2) + "\n")
            return result
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        tf_keras.mixed_precision.set_global_policy("float32")


def _compiled_model(config: TrainConfig, schema: Schema, strategy, task):
    model = models.compiled_model(config, schema, strategy, task)
    if config.warm_start:
        model.load_weights(uris.join(config.warm_start, savedmodel.WEIGHTS_PREFIX)
                           ).expect_partial()
        log.info("warm start from the weights of %s", config.warm_start)
    return model


def _checkpoints(model, config: TrainConfig, checkpoint_dir: str, chief: bool, scratch: str):
    """Restore the newest checkpoint; only the chief writes to the shared directory (other
    workers must still save, so they write to scratch). A kept checkpoint_dir resumes only
    the run its record names (checkpoint_record.py)."""
    import tensorflow as tf

    record = checkpoint_record.check(config) if config.checkpoint_dir else None
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="completed_epochs")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer, epoch=epoch)
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest:
        _restore(checkpoint, latest, checkpoint_dir)
    if record and chief:
        checkpoint_record.save(checkpoint_dir, record)
    directory = checkpoint_dir if chief else os.path.join(scratch, "checkpoints")
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)
    return manager, epoch, int(epoch.numpy())


def _restore(checkpoint, latest: str, checkpoint_dir: str) -> None:
    """Restore ``latest``; when it does not fit this model, say so naming the folder
    (TensorFlow's error names only a variable and a shape)."""
    import tensorflow as tf

    try:
        checkpoint.restore(latest).assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as err:
        reason = (str(err).strip() or repr(err)).splitlines()[0][:300]  # TF's can run long
        raise CheckpointMismatch(
            f"checkpoint_dir {checkpoint_dir}: its newest checkpoint {latest} cannot be "
            f"restored into this model ({type(err).__name__}: {reason}); a run with another "
            f"model, schema or settings wrote it (or it is damaged). Give this run a new "
            f"checkpoint_dir, or empty {checkpoint_dir} to start over there") from err


def _train_input(config: TrainConfig, schema: Schema, global_batch: int):
    import tf_keras

    def dataset_fn(input_context):
        return make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                            repeat=True, cache="memory" if config.cache else None,
                            shuffle_buffer=config.shuffle_buffer, seed=config.seed or None,
                            input_context=input_context)

    return tf_keras.utils.experimental.DatasetCreator(dataset_fn)


def _eval_dataset(config: TrainConfig, schema: Schema):
    dataset = make_dataset(config.dataset, schema, mode="eval", batch_size=256)
    return dataset.take(config.eval_steps) if config.eval_steps else dataset


def _input_wait(model, strategy, config: TrainConfig, schema: Schema, global_batch: int,
                budget_seconds: float = 1.0, fewest: int = 20, most: int = 400) -> float:
    """Share of step time the step is blocked on its next batch, as TensorFlow's profiler
    counts input-bound time. One function fetches a batch and another runs the step's
    forward and backward passes on it (nothing is applied), in turn, so the pipeline works
    in the background as it does under fit; fetching beyond what fetching one batch held in
    memory costs is time the pipeline was not ready. (The step slowed by an input pipeline
    sharing its cores shows in examples/s, not here.)"""
    import time

    import tensorflow as tf

    dataset = make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                           repeat=True, shuffle_buffer=config.shuffle_buffer)
    frozen = [v.numpy() for v in model.non_trainable_variables]

    def gradient_sum(features, labels):  # a result, so the passes are not pruned away
        with tf.GradientTape() as tape:
            loss = model.compiled_loss(labels, model(features, training=True))
        return tf.add_n([tf.reduce_sum(tf.cast(g, tf.float32)) for g in tape.gradient(
            loss, model.trainable_variables) if g is not None])

    fetch = tf.function(lambda iterator: next(iterator))

    @tf.function
    def step(batch):
        per_replica = strategy.run(gradient_sum, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def seconds(ds, steps: int = 0):
        """Seconds fetching and stepping over ``steps`` steps, or as many as fit the budget
        (from ``fewest`` to ``most``), after warming up."""
        iterator = iter(strategy.experimental_distribute_dataset(ds))
        for _ in range(3):  # traces both, and fills the input pipeline's prefetch buffers
            step(fetch(iterator))
        fetching = stepping = 0.0
        done = 0
        while done < (steps or most):
            start = time.perf_counter()
            batch = fetch(iterator)
            fetched = time.perf_counter()
            step(batch)
            fetching += fetched - start
            stepping += time.perf_counter() - fetched
            done += 1
            if not steps and done >= fewest and fetching + stepping >= budget_seconds:
                break
        return fetching, stepping, done

    # one batch held in memory: sampled (from an object store only its records are read)
    one = make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                       shuffle_buffer=config.shuffle_buffer, max_rows=global_batch)
    fetching, stepping, steps = seconds(dataset)
    fetching_held, _, _ = seconds(one.take(1).cache().repeat(), steps)
    for variable, value in zip(model.non_trainable_variables, frozen):
        variable.assign(value)
    return max(0.0, fetching - fetching_held) / (fetching + stepping)


def _model_metadata(config: TrainConfig, result: Dict[str, Any]) -> Dict[str, Any]:
    return {"framework": "tensorflow", "model": config.model_fn or config.model_name,
            "strategy": config.strategy, "replicas": result["replicas"],
            "global_batch_size": result["global_batch_size"], "precision": config.precision,
            "parameters": result["parameters"],
            **{k: v for k, v in result.items() if k.startswith("eval_")}}
