"""The tf.data reader every consumer of a sharded Dataset uses.

The fast pattern measured on these machines: interleave several TFRecord files, batch the
serialized records inside each file's reader (so interleave moves batches, not records),
parse whole batches with ``tf.io.parse_example`` (about 13x faster than
``parse_single_example`` per record), and prefetch. The record layout (one feature per column,
or scalar numbers packed into one list per dtype) comes from ``schema.json``; either gives the
same ``(features, label)`` dictionaries (see ``common.data.parsing``). Images are decoded and
resized per batch.

In the ``blocks`` layout a record holds many rows, so records are grouped, parsed together
and cut into batches of exactly ``batch_size`` rows (``rebatch``), never moving one row at a
time. When shuffling, one-row records move the same way, in groups of consecutive records of
a file (moving each record through a shuffle buffer on its own cost about 4 us a row here, more
than parsing it). Shuffling stays honest: the groups are shuffled (a buffer of the same number
of rows), then the rows of several groups are shuffled together before batching, so a batch
draws on many parts of the input rather than one run of consecutive rows.

A batch is parsed and decoded by ``common.data.decoding``; a file's records are read in place
or fetched by ``common.data.record_files``.
"""

from typing import List

from tfkfp.components.common.data.dataset import split_files
from tfkfp.components.common.data.decoding import parser
from tfkfp.components.common.data.record_files import fetched, file_records
from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.platform import fetch_cache, uris

MODES = ("train", "eval", "predict")


def make_dataset(
    dataset: str,
    schema: Schema | None = None,
    mode: str = "train",
    batch_size: int = 256,
    split: str | None = None,
    shuffle: bool | None = None,
    shuffle_buffer: int = 10_000,
    repeat: bool = False,
    cache: str | None = None,
    deterministic: bool | None = None,
    drop_remainder: bool = False,
    num_parallel_reads: int | None = None,
    seed: int | None = None,
    input_context=None,
    auto_shard_policy: str = "auto",
    max_rows: int = 0,
):
    """A batched ``tf.data.Dataset`` over a sharded Dataset.

    Args:
        dataset: a Dataset directory from shard_tfrecords, or a TFRecord file pattern.
        schema: the schema; read from ``schema.json`` in ``dataset`` when omitted.
        mode: ``train`` and ``eval`` yield ``(features, label)``; ``predict`` yields
            ``(features, keys)`` with the passthrough key columns.
        batch_size: examples per batch (per replica when input_context is given).
        split: ``train`` or ``eval`` split of a Dataset directory (default: by mode, and
            ``eval`` for predict).
        shuffle: shuffle files and records (default: only in train mode).
        repeat: repeat forever (for step-based training).
        cache: cache serialized records: ``"memory"`` or a file path prefix.
        deterministic: keep a fixed order (default: True unless shuffling).
        input_context: a ``tf.distribute.InputContext``: reads only this input pipeline's
            files and uses the per-replica batch size.
        auto_shard_policy: ``auto``, ``file``, ``data`` or ``off`` for distribution
            strategies that shard the dataset themselves.
        max_rows: at most about this many rows (0: all), for a caller that samples: from an
            object store only the first records are read, not whole shards.

    Labels with a vocabulary come out as class indices (int64); images as float32 in [0, 1]
    with the schema's image_shape.

    Raises:
        DatasetMismatchError: before anything is read, naming each shard of a Dataset
            directory whose size is not the one its manifest lists (truncated, even on a
            record boundary, replaced or missing), or a schema.json that is not the
            manifest's.
    """
    import tensorflow as tf

    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    schema = schema or Schema.load(dataset if uris.isdir(dataset) else _parent(dataset))
    if mode != "predict" and schema.label is None:
        raise SchemaError(f"{dataset} has no label column, so it can only be read with "
                          f"mode='predict', not mode={mode!r}")
    split = split or ("train" if mode == "train" else "eval")
    files, compression = split_files(dataset, split)
    if max_rows and fetched(files):
        files, compression = _head_file(files, compression, schema, max_rows), ""
    shuffle = mode == "train" if shuffle is None else shuffle
    deterministic = not shuffle if deterministic is None else deterministic
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)

    if schema.record_layout.multi_row or shuffle:
        return _grouped_dataset(files, compression, schema, mode, batch_size, shuffle,
                                shuffle_buffer, repeat, cache, deterministic, drop_remainder,
                                num_parallel_reads, seed, input_context, auto_shard_policy)
    # not shuffled: batch inside each file, so interleave moves batches, not records
    ds, share, cycle = _file_dataset(files, shuffle, seed, input_context, num_parallel_reads)
    fetch = fetched(files)
    ds = ds.interleave(
        lambda f: file_records(f, compression, share, fetch).batch(
            batch_size, drop_remainder=drop_remainder),
        cycle_length=max(cycle, 1), num_parallel_calls=_calls(cycle),
        deterministic=deterministic if cycle else None)
    ds = ds.cache(_cache_path(cache)) if cache else ds
    ds = ds.repeat() if repeat else ds
    ds = ds.map(parser(schema, mode), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic)
    return _finish(ds, deterministic, auto_shard_policy)


def _finish(ds, deterministic: bool, auto_shard_policy: str):
    import tensorflow as tf

    options = tf.data.Options()
    options.deterministic = deterministic
    options.experimental_distribute.auto_shard_policy = _policy(auto_shard_policy)
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


MIX_ROWS = 2048  # rows shuffled together when shuffling: 8 blocks of 256 rows
GROUP_RECORDS = 64  # one-row records that move through a shuffle as one element


def _grouped_dataset(files, compression: str, schema: Schema, mode: str, batch_size: int,
                     shuffle: bool, shuffle_buffer: int, repeat: bool, cache: str | None,
                     deterministic: bool, drop_remainder: bool, num_parallel_reads,
                     seed, input_context, auto_shard_policy: str):
    """``make_dataset`` for the ``blocks`` layout, and for every layout when shuffling.

    Rows move in groups, never one at a time: a block record, or ``GROUP_RECORDS``
    consecutive one-row records of a file (records moved one by one through a shuffle
    buffer cost more CPU than parsing them). Groups are shuffled (a buffer of about
    ``shuffle_buffer`` rows), the rows of ``MIX_ROWS`` rows' worth of groups shuffled
    together (blocks once parsed; one-row records still serialized, so they are parsed a
    batch at a time, as many decoded images as a batch holds), and cut into batches of
    exactly ``batch_size`` rows."""
    import tensorflow as tf

    blocks = schema.record_layout.multi_row
    group_rows = schema.block_rows if blocks else GROUP_RECORDS
    per_batch = -(-batch_size // group_rows)  # groups that hold one batch of rows
    per_parse = max(per_batch, MIX_ROWS // group_rows) if shuffle else per_batch
    ds, share, cycle = _file_dataset(files, shuffle, seed, input_context, num_parallel_reads)
    fetch = fetched(files)

    def groups(path):
        records = file_records(path, compression, share, fetch)
        return records if blocks else records.batch(GROUP_RECORDS)

    ds = ds.interleave(groups, cycle_length=max(cycle, 1),
                       block_length=1 if shuffle else per_batch,
                       num_parallel_calls=_calls(cycle),
                       deterministic=deterministic if cycle else None)
    ds = ds.cache(_cache_path(cache)) if cache else ds
    if shuffle:
        ds = ds.shuffle(max(2, shuffle_buffer // group_rows), seed=seed,
                        reshuffle_each_iteration=True)
    ds = ds.repeat() if repeat else ds
    parse = parser(schema, mode)
    if blocks:  # rows exist once a block is parsed: parse, then shuffle the rows
        mix = _mixer(seed) if shuffle else None
        ds = ds.batch(per_parse).map(lambda records: mix(*parse(records)) if mix
                                     else parse(records),
                                     num_parallel_calls=tf.data.AUTOTUNE,
                                     deterministic=deterministic)
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)
    else:  # shuffle the serialized records, then parse a batch at a time (images stay small)
        ds = ds.ragged_batch(per_parse).map(
            lambda records: tf.random.shuffle(records.flat_values, seed=seed))
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder).map(
            parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    return _finish(ds, deterministic, auto_shard_policy)


def _mixer(seed: int | None):
    """``(features, other) -> the same rows in a random order``."""
    import tensorflow as tf

    def mix(features, other):
        rows = tf.shape(tf.nest.flatten((features, other))[0])[0]
        order = tf.random.shuffle(tf.range(rows), seed=seed)
        return tf.nest.map_structure(lambda t: tf.gather(t, order), (features, other))

    return mix


def _calls(cycle: int):
    """Interleave's parallelism: tf.data's own, or none (cycle 0: files too big for the
    fetch budget to open one ahead, so one is read, then the next fetched; then order is
    deterministic anyway, and tf.data warns when told either way)."""
    import tensorflow as tf

    return tf.data.AUTOTUNE if cycle else None


def _file_dataset(files, shuffle: bool, seed, input_context, num_parallel_reads):
    """The files this input pipeline reads (shuffled when shuffling), the share of records
    it keeps when there are too few files to go round, and how many files to read at once."""
    import tensorflow as tf

    cycle = num_parallel_reads or min(len(files), 8) or 1
    if fetched(files):  # fetched whole to local disk: as many at once as the budget holds
        cycle = fetch_cache.files_at_once(files, cycle)  # 0: one by one, none read ahead
    pipelines = input_context.num_input_pipelines if input_context is not None else 1
    ds = tf.data.Dataset.from_tensor_slices(files)
    if pipelines > 1 and len(files) >= pipelines:
        ds = ds.shard(pipelines, input_context.input_pipeline_id)
    # Too few files to go round: every pipeline reads all files, keeping every n-th record.
    share = (pipelines, input_context.input_pipeline_id) if 1 < pipelines > len(files) else None
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    return ds, share, cycle


def _head_file(files: List[str], compression: str, schema: Schema, rows: int) -> List[str]:
    """A local TFRecord file of the first records holding ``rows`` rows, streamed from the
    store (see common.data.record_stream)."""
    import tensorflow as tf

    from tfkfp.components.common.data.record_stream import head_records

    per_record = schema.block_rows if schema.record_layout.multi_row else 1
    records = head_records(files, compression, -(-rows // per_record))
    path = fetch_cache.shared().scratch_file("head.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return [path]


def _cache_path(cache: str) -> str:
    return "" if cache == "memory" else cache


def _parent(pattern: str) -> str:
    head = pattern.rsplit("/", 1)[0]
    return head.rsplit("/", 1)[0] if head.endswith(("train", "eval")) else head


def _policy(name: str):
    import tensorflow as tf

    policies = {"auto": tf.data.experimental.AutoShardPolicy.AUTO,
                "file": tf.data.experimental.AutoShardPolicy.FILE,
                "data": tf.data.experimental.AutoShardPolicy.DATA,
                "off": tf.data.experimental.AutoShardPolicy.OFF}
    if name not in policies:
        raise ValueError(f"auto_shard_policy {name!r} is not one of {sorted(policies)}")
    return policies[name]
