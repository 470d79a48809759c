"""Tune train's settings with a local Optuna study, a Katib Experiment or a Vertex AI
HyperparameterTuningJob.

``tune`` here is the KFP op of component.py, not core.tune.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["tune", "train_settings"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
