"""stream_predict: rows from a Pub/Sub subscription predicted in an Apache Beam streaming job,
one prediction message per row to an output topic, each row that cannot be predicted to a
dead-letter topic naming why.

``stream_predict`` here is the KFP op of component.py, not core.stream_predict.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["stream_predict"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
