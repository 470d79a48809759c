"""What sharding refuses before reading anything (the pipelines check requests with it before
a run starts), and the values its options take. It imports no NumPy or TensorFlow."""

import json
from typing import Dict

from tfkfp.components.common.data import data_root as data_root_rules
from tfkfp.components.common.data import formats
from tfkfp.components.common.data.dataset import COMPRESSIONS
from tfkfp.components.common.data.layouts import (
    DEFAULT_BLOCK_ROWS,
    DEFAULT_LAYOUT,
    LAYOUTS,
    MAX_BLOCK_ROWS,
)
from tfkfp.components.shard_tfrecords.errors import ShardInputError

FORMATS = formats.names(formats.SHARD)  # input_format, besides auto (common.data.formats)
MISSING_POLICIES = ("impute", "error")  # missing: keep rows with gaps, or refuse the first


def check_input_format(input_format: str) -> None:
    """Refuse an input_format that is neither auto nor a format sharding reads."""
    if input_format not in formats.choices(formats.SHARD):
        raise ShardInputError(f"input_format {input_format!r} is not one of "
                              f"{', '.join(formats.choices(formats.SHARD))}")


def check_options(eval_fraction: float, compression: str, shard_size_mb: float,
                  num_shards: int, min_shards: int, column_types: Dict[str, str],
                  split_column: str | None, missing: str, layout: str = DEFAULT_LAYOUT,
                  block_rows: int = DEFAULT_BLOCK_ROWS, input_format: str = "auto",
                  data_root: str = data_root_rules.AUTO) -> None:
    """What sharding refuses before reading anything (pipelines check requests with it)."""
    try:
        data_root_rules.check(data_root)
    except data_root_rules.DataRootError as err:
        raise ShardInputError(str(err)) from err
    check_input_format(input_format)
    if layout not in LAYOUTS:
        raise ShardInputError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if LAYOUTS[layout].multi_row and not 1 <= block_rows <= MAX_BLOCK_ROWS:
        raise ShardInputError(f"block_rows {block_rows} is outside 1..{MAX_BLOCK_ROWS}; "
                              f"expected e.g. {DEFAULT_BLOCK_ROWS} rows per record")
    if missing not in MISSING_POLICIES:
        raise ShardInputError(f"missing {missing!r} is not one of {MISSING_POLICIES}")
    if not split_column and not 0.0 < eval_fraction < 1.0:
        raise ShardInputError(f"eval_fraction {eval_fraction} is outside (0, 1); expected e.g. "
                              "0.1 for 10% of rows in the eval split")
    if compression not in COMPRESSIONS:
        raise ShardInputError(f"compression {compression!r} is not one of {COMPRESSIONS}")
    if num_shards < 0 or (num_shards == 0 and shard_size_mb <= 0):
        raise ShardInputError(f"num_shards {num_shards} / shard_size_mb {shard_size_mb}: "
                              "expected num_shards >= 1, or num_shards 0 and shard_size_mb > 0")
    if min_shards < 1:
        raise ShardInputError(f"min_shards {min_shards} is below 1")
    bad = {k: v for k, v in column_types.items() if v not in ("float32", "int64", "string")}
    if bad:
        raise ShardInputError(f"column_types {json.dumps(bad)}: types must be float32, int64 "
                              "or string")
