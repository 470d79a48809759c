"""Batch prediction with a tfkfp SavedModel or TFLite model over TFRecord, CSV or JSON Lines.

``batch_predict`` here is the KFP op of component.py, not core.batch_predict.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["batch_predict", "merge_predictions", "vertex_batch_predict"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
