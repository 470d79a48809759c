"""``tfkfp shard``: input data (CSV, JSON Lines, Parquet, npz, images) into a TFRecord Dataset
directory, as the shard_tfrecords step writes it."""

import argparse
import sys
from typing import Dict, List

from tfkfp.cli.option_flags import add_flag
from tfkfp.components.common.data.layouts import LAYOUTS


def add_parser(commands) -> None:
    """Its flags are shard_tfrecords' settings (ShardOptions), so the command shards as the
    step does."""
    from tfkfp.components.shard_tfrecords.options import ShardOptions as Shard

    shard = commands.add_parser("shard", help="shard CSV/JSONL/Parquet/npz/images into "
                                "TFRecords", description="Shard input data into a TFRecord "
                                "Dataset directory (train/, eval/, schema.json, manifest.json).")
    shard.add_argument("input", help="file, folder, glob pattern or gs:// URI")
    shard.add_argument("dataset", help="the Dataset directory to write")
    add_flag(shard, Shard, "label", help=f"{Shard.meaning('label')}; omit for unlabeled data "
             "to predict on")
    add_flag(shard, Shard, "keys", metavar="COLUMN")
    for name in ("eval_fraction", "split_column", "compression"):
        add_flag(shard, Shard, name)
    size = shard.add_mutually_exclusive_group()
    add_flag(size, Shard, "shard_size_mb", metavar="MB")
    add_flag(size, Shard, "num_shards", metavar="N")
    add_flag(shard, Shard, "min_shards")
    add_flag(shard, Shard, "column_types", action="extend", nargs="+", default=[],
             metavar="NAME=TYPE")
    for name in ("input_format", "threads", "missing"):
        add_flag(shard, Shard, name)
    add_flag(shard, Shard, "layout", help="; ".join(
        f"{n}: {x.summary}" for n, x in LAYOUTS.items()) + f" (default {Shard().layout})")
    add_flag(shard, Shard, "block_rows")
    shard.add_argument("--shard-dir", default="", metavar="URI",
                       help="keep the shards here (a path or s3://, minio://, gs:// URI) and "
                       "only schema.json and manifest.json in DATASET, which lists them by "
                       "URI (default: inside DATASET)")


def _column_types(pairs: List[str]) -> Dict[str, str]:
    types = {}
    for pair in pairs:
        name, sep, dtype = pair.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(
                f"--column-types {pair!r}: expected NAME=TYPE, e.g. age=float32")
        types[name] = dtype
    return types


def run(args: argparse.Namespace) -> None:
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # here rather than mid-progress
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.shard_tfrecords.options import ShardOptions

    options = ShardOptions.of(vars(args), column_types=_column_types(args.column_types))
    result = shard_tfrecords(args.input, args.dataset, options, shard_dir=args.shard_dir,
                             progress_stream=sys.stderr)
    print(result.markdown())
    print(f"Dataset written to {args.dataset}")

