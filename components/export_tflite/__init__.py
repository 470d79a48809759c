"""Export a deployable TFLite bundle and gate it on parity with the SavedModel in LiteRT.

``export_tflite`` here is the KFP op of component.py, not core.export_tflite.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["export_tflite"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
