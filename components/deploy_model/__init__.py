"""deploy_model: put a model behind an endpoint (KServe InferenceService, Vertex AI Endpoint or
an endpoint that already runs), gate it against the model already serving, smoke-test it.

``deploy_model`` here is the KFP op of component.py, not core.deploy_model.
"""

from tfkfp.components.common.platform.component_ops import lazy_ops

__all__ = ["deploy_gate", "deploy_model", "publish_precomputed", "smoke_test"]
__getattr__, __dir__ = lazy_ops(__name__, __all__)  # kfp on first use
