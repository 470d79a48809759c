"""One diagnosis session in this process: the input measured alone, then the model built as
train builds it, its memory need checked against the budget, then the step measured alone
and fed by the real input pipeline."""

import dataclasses
import logging
import math
import time
from typing import Any, Dict

from tfkfp.components.common.data.dataset import Manifest, tf_compression
from tfkfp.components.common.data.packing import packable
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.platform import uris
from tfkfp.components.common.training import models, strategies
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.diagnose_bottleneck import measure, memory

log = logging.getLogger("tfkfp")
HELD_BATCHES = 2
CACHE_FILL = 10  # filling train's cache (one epoch) may take this many times ``seconds``
LARGER_BATCH = 4  # the compute-bound check of a larger batch multiplies by this
ROUNDS = 3  # alternating rounds of the step alone and fed


def run(config: TrainConfig, schema: Schema, train_records: int, memory_limit_mb: int,
        seconds: float) -> Dict[str, Any]:
    """Every figure of the diagnosis, as a flat dict."""
    import tensorflow as tf
    import tf_keras

    if config.precision != "float32":
        tf_keras.mixed_precision.set_global_policy(config.precision)
    try:
        strategy = strategies.make_strategy(config)
        replicas = strategy.num_replicas_in_sync
        figures: Dict[str, Any] = {
            "replicas": replicas, "global_batch_size": config.batch_size * replicas,
            "train_records": train_records, "gpus": len(tf.config.list_logical_devices("GPU"))}
        figures.update(input_figures(config, schema, figures["global_batch_size"],
                                     train_records, seconds))
        started = memory.host_memory()
        model = _compiled_model(config, schema, strategy)
        figures.update(memory_figures(memory.model_footprint(model), figures, config,
                                      memory_limit_mb, started))
        if figures["memory_fits"]:
            try:
                figures.update(step_figures(model, strategy, config, schema, figures, seconds))
            except tf.errors.ResourceExhaustedError as err:
                figures["out_of_memory"] = str(err).splitlines()[0][:300]
        else:
            log.info("a step needs %.0f MB, more than the %.0f MB budget: the step is not run",
                     figures["step_memory_mb"], figures["memory_budget_mb"])
        after = memory.host_memory()
        figures["peak_rss_mb"] = round(after.peak_rss / memory.MB, 1)
        figures["device_peak_mb"] = round(memory.device_peak_bytes() / memory.MB, 1)
        return figures
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")


def input_figures(config: TrainConfig, schema: Schema, global_batch: int, train_records: int,
                  seconds: float) -> Dict[str, Any]:
    """The train split read cold without parsing, then through train's own input pipeline."""
    manifest = Manifest.load(config.dataset)
    files = manifest.shard_files("train")
    file_bytes = sum(uris.size(f) for f in files)
    cold = measure.evict_page_cache(files)
    read = measure.read_raw(files, tf_compression(manifest.compression), seconds)
    # a TFRecord record holds several rows in the blocks layout; rates here are of rows
    rows_per_record = train_records / max(sum(manifest.shard_blocks("train")), 1)
    read = dataclasses.replace(read, records=round(read.records * rows_per_record))
    disk_per_record = file_bytes / train_records
    payload_per_record = read.payload_bytes / max(read.records, 1)
    measure.evict_page_cache(files)
    dataset = make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                           repeat=True, cache="memory" if config.cache else None,
                           shuffle_buffer=config.shuffle_buffer, seed=config.seed or None)
    epoch = math.ceil(train_records / global_batch)
    parsed, filled = measure.pipeline_rate(dataset, seconds, epoch if config.cache else 0,
                                           CACHE_FILL * seconds)
    log.info("input: %.0f records/s read cold, %.0f records/s parsed",
             read.records_per_second, parsed.records_per_second)
    return {
        "num_shards": len(files), "compression": manifest.compression,
        "layout": schema.layout,
        "packable_columns": len([c for c in schema.features if packable(c)]),
        "shards_mb": round(file_bytes / memory.MB, 3), "read_cold": cold,
        "read_records_per_second": read.records_per_second,
        "read_mb_per_second": read.records_per_second * disk_per_record / memory.MB,
        "record_bytes": round(payload_per_record, 1),
        "train_payload_mb": payload_per_record * train_records / memory.MB,
        "cache_filled": bool(config.cache and filled),
        "input_records_per_second": parsed.records_per_second,
        "input_mb_per_second": parsed.records_per_second * disk_per_record / memory.MB}


def memory_figures(footprint: memory.Footprint, figures: Dict[str, Any], config: TrainConfig,
                   memory_limit_mb: int, host: memory.HostMemory) -> Dict[str, Any]:
    """The step's need against the budget: on GPUs, one replica against one GPU's memory; on
    the CPU, every replica and the cache against the host's."""
    batch, gpus = config.batch_size, figures["gpus"]
    sharing = 1 if gpus else figures["replicas"]
    cache = figures["train_payload_mb"] * memory.MB if config.cache and not gpus else 0
    device = memory.device_total_bytes() if gpus and not memory_limit_mb else 0
    budget, source = ((memory_limit_mb * memory.MB, "memory_limit_mb") if memory_limit_mb else
                      (device, "GPU memory") if device else
                      (host.available, "available host memory"))
    need = footprint.step_bytes(batch) * sharing + cache
    half = dataclasses.replace(
        footprint, activation_bytes_per_example=footprint.activation_bytes_per_example // 2)
    return {
        **host.to_dict(),
        "parameters": footprint.parameters,
        "parameter_mb": footprint.parameter_bytes / memory.MB,
        "activation_mb": footprint.activation_bytes_per_example * batch * sharing / memory.MB,
        "input_batch_mb": footprint.input_bytes_per_example * batch * sharing / memory.MB,
        "cache_mb": cache / memory.MB, "activations_known": footprint.known_shapes,
        "step_memory_mb": need / memory.MB, "memory_budget_mb": budget / memory.MB,
        "memory_budget_source": source,
        "memory_fits": need <= budget * memory.HEADROOM,
        "largest_fitting_batch": footprint.largest_batch(budget, sharing, cache),
        "largest_fitting_batch_half_precision": half.largest_batch(budget, sharing, cache),
        "larger_batch_fits": footprint.step_bytes(batch * LARGER_BATCH) * sharing + cache
        <= budget * memory.HEADROOM}


def step_figures(model, strategy, config: TrainConfig, schema: Schema,
                 figures: Dict[str, Any], seconds: float) -> Dict[str, Any]:
    """The step on batches held in memory, then fed by the real pipeline."""
    global_batch, per_call = figures["global_batch_size"], config.steps_per_execution
    train_function = model.make_train_function()  # per_call steps a call, as train runs it
    held_batches = _held(strategy, config, schema, global_batch)
    iterator = _streamed(strategy, config, schema, global_batch)
    if config.cache:
        measure.skip(iterator, math.ceil(figures["train_records"] / global_batch),
                     CACHE_FILL * seconds)
    held, both = _alone_and_fed(train_function, held_batches, iterator, global_batch,
                                seconds, per_call)
    out = {"compute_records_per_second": held.records_per_second,
           "combined_records_per_second": both.records_per_second,
           "step_ms": 1000 * held.seconds * global_batch / max(held.records, 1),
           "input_wait_fraction": max(0.0, 1.0 - both.records_per_second
                                      / held.records_per_second)}
    log.info("step: %.0f records/s on held batches, %.0f records/s fed by the pipeline",
             held.records_per_second, both.records_per_second)
    if figures["larger_batch_fits"] and figures["input_records_per_second"] >= \
            held.records_per_second:
        larger = global_batch * LARGER_BATCH
        rate = measure.step_rate(train_function, _held(strategy, config, schema, larger),
                                 larger, seconds, warmup=HELD_BATCHES, steps_per_call=per_call)
        out["larger_batch_size"] = config.batch_size * LARGER_BATCH
        out["larger_batch_records_per_second"] = rate.records_per_second
    return out


def _alone_and_fed(train_function, held_batches, fed_batches, global_batch: int,
                   seconds: float, per_call: int):
    """The step alone and fed by the pipeline, measured in alternating rounds, each the
    median of its rounds: a burst of other work on shared cores then skews one round of
    one side, not the whole comparison (the wait share swung from 35% to 55% between runs)."""
    alone, fed = [], []
    for i in range(ROUNDS):
        alone.append(measure.step_rate(train_function, held_batches, global_batch,
                                       seconds / ROUNDS, warmup=HELD_BATCHES if i == 0 else 0,
                                       steps_per_call=per_call))
        fed.append(measure.step_rate(train_function, fed_batches, global_batch,
                                     seconds / ROUNDS, warmup=1 if i == 0 else 0,
                                     steps_per_call=per_call))
    return _median(alone), _median(fed)


def _median(rates):
    return sorted(rates, key=lambda rate: rate.records_per_second)[len(rates) // 2]


def _held(strategy, config: TrainConfig, schema: Schema, global_batch: int):
    dataset = make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                           repeat=True, shuffle_buffer=config.shuffle_buffer)
    held = dataset.take(HELD_BATCHES).cache().repeat()
    return iter(strategy.experimental_distribute_dataset(held))


def _streamed(strategy, config: TrainConfig, schema: Schema, global_batch: int):
    dataset = make_dataset(config.dataset, schema, mode="train", batch_size=global_batch,
                           repeat=True, cache="memory" if config.cache else None,
                           shuffle_buffer=config.shuffle_buffer, seed=config.seed or None)
    return iter(strategy.experimental_distribute_dataset(dataset))


def _compiled_model(config: TrainConfig, schema: Schema, strategy):
    """The model and optimizer train would build (the same function builds both)."""
    started = time.perf_counter()
    model = models.compiled_model(config, schema, strategy)
    log.info("built %s with %d parameters in %.1fs", model.name, model.count_params(),
             time.perf_counter() - started)
    return model
