"""shard_tfrecords' settings (ShardOptions), checked before anything is read: the pipelines
check requests with them before a run starts. It imports no NumPy or TensorFlow."""

import dataclasses
import json
from typing import ClassVar, Dict, List

from tfkfp.components.common.data import data_root as data_root_rules
from tfkfp.components.common.data import formats
from tfkfp.components.common.data.columns import DTYPES
from tfkfp.components.common.data.dataset import COMPRESSIONS
from tfkfp.components.common.data.layouts import (
    DEFAULT_BLOCK_ROWS,
    DEFAULT_LAYOUT,
    LAYOUTS,
    MAX_BLOCK_ROWS,
)
from tfkfp.components.common.platform.step_options import StepOptions, setting
from tfkfp.components.shard_tfrecords.errors import ShardInputError

FORMATS = formats.names(formats.SHARD)  # input_format, besides auto (common.data.formats)
MISSING_POLICIES = ("impute", "error")  # missing: keep rows with gaps, or refuse the first


def check_input_format(input_format: str) -> None:
    """Refuse an input_format that is neither auto nor a format sharding reads."""
    if input_format not in formats.choices(formats.SHARD):
        raise ShardInputError(f"input_format {input_format!r} is not one of "
                              f"{', '.join(formats.choices(formats.SHARD))}")


@dataclasses.dataclass(frozen=True)
class ShardOptions(StepOptions):
    """How shard_tfrecords shards: every setting of the step, checked when built (what the
    pipelines check a request with before a run starts, and what the core takes)."""

    error: ClassVar = ShardInputError

    label: str = setting("", "label column; empty for unlabeled data (images: the class "
                             "folder name)")
    keys: List[str] = setting([], "passthrough key columns, carried into predictions; they "
                                  "drive the split hash")
    column_types: Dict[str, str] = setting({}, "column types overriding inference: float32, "
                                               "int64 or string")
    split_column: str = setting("", "column of train/eval values to split by, instead of a "
                                    "hash")
    eval_fraction: float = setting(0.1, "share of rows hashed into the eval split, in (0, 1)")
    compression: str = setting("none", "shard compression", COMPRESSIONS)
    shard_size_mb: float = setting(128.0, "target shard size in MB when num_shards is 0")
    num_shards: int = setting(0, "exact number of shards per split (0: from shard_size_mb)")
    min_shards: int = setting(2, "at least this many shards per split")
    input_format: str = setting("auto", "input format (auto: from the file extensions)",
                                lambda: formats.choices(formats.SHARD))
    file_group: int = setting(0, "which group of the input files to shard (for a fan-out)")
    file_groups: int = setting(1, "how many groups the input files are dealt into")
    threads: int = setting(0, "threads for reading and encoding (0: one per CPU)")
    missing: str = setting("impute", "impute keeps rows with blank, null or NaN values; "
                                     "error refuses the first", MISSING_POLICIES)
    layout: str = setting(DEFAULT_LAYOUT, "packed, columns or blocks (see the step's docs)",
                          lambda: tuple(LAYOUTS))
    block_rows: int = setting(DEFAULT_BLOCK_ROWS, "rows per record in the blocks layout")
    data_root: str = setting(data_root_rules.AUTO, "where the step keeps the shards (auto, "
                                                   "inside, or a path or URI)")

    def check(self) -> None:
        try:
            data_root_rules.check(self.data_root)
        except data_root_rules.DataRootError as err:
            raise ShardInputError(str(err)) from err
        if LAYOUTS[self.layout].multi_row and not 1 <= self.block_rows <= MAX_BLOCK_ROWS:
            raise ShardInputError(f"block_rows {self.block_rows} is outside "
                                  f"1..{MAX_BLOCK_ROWS}; expected e.g. {DEFAULT_BLOCK_ROWS} "
                                  "rows per record")
        if not self.split_column and not 0.0 < self.eval_fraction < 1.0:
            raise ShardInputError(f"eval_fraction {self.eval_fraction} is outside (0, 1); "
                                  "expected e.g. 0.1 for 10% of rows in the eval split")
        if self.num_shards < 0 or (self.num_shards == 0 and self.shard_size_mb <= 0):
            raise ShardInputError(f"num_shards {self.num_shards} / shard_size_mb "
                                  f"{self.shard_size_mb}: expected num_shards >= 1, or "
                                  "num_shards 0 and shard_size_mb > 0")
        if self.min_shards < 1:
            raise ShardInputError(f"min_shards {self.min_shards} is below 1")
        bad = {k: v for k, v in (self.column_types or {}).items() if v not in DTYPES}
        if bad:
            raise ShardInputError(f"column_types {json.dumps(bad)}: types must be "
                                  f"{', '.join(DTYPES[:-1])} or {DTYPES[-1]}")
