"""Freeze a SavedModel into an inference graph and quantize it to TFLite, measuring each mode.

``freeze_quantize`` here is the KFP op of component.py, not core.freeze_quantize.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["freeze_quantize"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
