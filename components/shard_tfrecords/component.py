"""KFP components: shard raw data into a TFRecord Dataset (see core.shard_tfrecords), and
the two small steps around a sharding fan-out: fingerprint_input and group_numbers."""

from typing import Dict, List

from kfp import dsl
from kfp.dsl import Dataset, Markdown, Output

from tfkfp.components._image import IMAGE


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def shard_tfrecords(
    input_uri: str,
    dataset: Output[Dataset],
    summary: Output[Markdown],
    label: str = "",
    keys: List[str] = [],  # noqa: B006 - KFP reads defaults from the signature
    column_types: Dict[str, str] = {},  # noqa: B006
    split_column: str = "",
    eval_fraction: float = 0.1,
    compression: str = "none",
    shard_size_mb: float = 128.0,
    num_shards: int = 0,
    min_shards: int = 2,
    input_format: str = "auto",
    file_group: int = 0,
    file_groups: int = 1,
    missing: str = "impute",
    layout: str = "packed",
    block_rows: int = 256,
    input_fingerprint: str = "",
    data_root: str = "auto",
):
    """Shards CSV, JSON Lines, Parquet, .npz or an image folder into TFRecord files.

    Args:
        input_uri: File, folder, glob pattern or gs://, s3:// or minio:// URI of the input
            data; a folder of class subfolders is read as labelled images.
        dataset: Output Dataset directory: train/ and eval/ shards, schema.json, manifest.json.
        summary: Output Markdown table of splits, shards and columns for the KFP UI.
        label: Label column; empty for unlabeled data (images: the class folder).
        keys: Passthrough key columns, carried into predictions; they drive the split hash.
        column_types: Column types overriding inference: float32, int64 or string.
        split_column: Column holding train/eval per row, instead of a hash split.
        eval_fraction: Share of rows hashed into the eval split, in (0, 1).
        compression: none or gzip.
        shard_size_mb: Target shard size in MB when num_shards is 0.
        num_shards: Exact number of shards per split; 0 derives it from shard_size_mb.
        min_shards: Minimum shards per split, so every reader or worker gets several.
        input_format: auto, csv, jsonl, parquet, npz or images.
        file_group: Which group of input files this task shards (for fan-out).
        file_groups: How many groups the input files are dealt into.
        missing: impute (keep rows with blank, null or NaN values: the trained model fills
            numbers with the column mean and maps empty strings to out-of-vocabulary; gaps
            are counted in the schema) or error (refuse the first gap). A blank label is
            always refused.
        layout: packed (the scalar float32 features as one FloatList and the scalar int64
            features as one Int64List per row, names and order in schema.json; parses about
            twice as fast) or columns (one feature per column). Strings, images, labels and
            keys are one feature each in both; tfkfp readers take either. Or blocks: packed,
            block_rows rows per record, the fastest to read; for tfkfp readers only (not
            serving_default or Vertex AI batch prediction, which take one row per Example).
        block_rows: Rows per record in the blocks layout.
        input_fingerprint: fingerprint_input's digest of the input files, so new data at the
            same input_uri changes the step's cache key and is sharded again.
        data_root: Where the shards are kept. auto: beside the Dataset artifact on its
            object store when the step can write there (gs://, or s3:// and minio:// with
            S3 credentials), so the artifact holds only schema.json and manifest.json and
            later steps stream the shards instead of downloading them; otherwise inside the
            artifact. inside: always inside. A path or s3://, minio://, gs:// URI: a folder
            per Dataset under it (a relative path is taken from the step's working folder,
            where tfkfp run was started, and may not leave it).
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging

    from tfkfp.components.common.data.data_root import shard_dir
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords as shard
    from tfkfp.components.shard_tfrecords.options import ShardOptions

    logging.basicConfig(level=logging.INFO)
    options = ShardOptions.of(settings)
    result = shard(input_uri, dataset.path, options,
                   shard_dir=shard_dir(options.data_root, dataset.uri))
    dataset.metadata.update({**result.metadata(), "input_fingerprint": input_fingerprint})
    with open(summary.path, "w") as f:
        f.write(result.markdown())


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def fingerprint_input(input_uri: str, input_format: str = "auto") -> str:
    """Digests the input files' names, sizes and modification times (one stat per file).

    Runs uncached before shard_tfrecords, whose cache key then changes with the data, not
    only with the input_uri string.

    Args:
        input_uri: File, folder, glob pattern or gs:// URI of the input data.
        input_format: auto, csv, jsonl, parquet, npz or images.

    Returns:
        sha256:<hex> of every input file's name, size and modification time.
    """
    from tfkfp.components.shard_tfrecords.sources import fingerprint

    return fingerprint(input_uri, input_format)


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def group_numbers(count: int) -> List[int]:
    """The numbers 0..count-1, one ParallelFor iteration (one pod on a cluster) each.

    Args:
        count: How many groups the work is dealt into (at least 1).

    Returns:
        The group numbers, 0 to count-1, as each fanned-out task's file_group.
    """
    if count < 1:
        raise ValueError(f"the group count must be at least 1, got {count}")
    return list(range(count))
