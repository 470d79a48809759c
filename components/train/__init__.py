"""Train a classifier or a regressor on a sharded Dataset, here or on a cluster.

``train`` here is the KFP op of component.py, not core.train.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["train"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
