"""Merge the Datasets of fanned-out shard_tfrecords tasks into one self-contained Dataset.

``merge_datasets`` here is the KFP op of component.py, not core.merge_datasets.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["merge_datasets"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
