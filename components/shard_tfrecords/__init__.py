"""Shard CSV, JSON Lines, Parquet, NumPy or image-folder data into TFRecord files.

``shard_tfrecords`` here is the KFP op of component.py, not core.shard_tfrecords.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["shard_tfrecords", "fingerprint_input", "group_numbers"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
