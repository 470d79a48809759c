"""Tell whether training is bound by its input, its compute or its memory, and what to do.

``diagnose_bottleneck`` here is the KFP op of component.py, not core.diagnose_bottleneck.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["diagnose_bottleneck"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
