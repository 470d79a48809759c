"""The URL paths of the serving protocols tfkfp speaks and calls: KServe v1 and the Open
Inference Protocol (v2), the one place they are spelled.

``tfkfp serve`` answers them (KServe's server registers them), and deploy_model's readiness
probes and smoke test, Vertex AI's container spec, ``tfkfp loadtest``, batch_predict's
endpoint mode and the benchmarks call them. A model name is quoted as a URL path segment.
"""

import urllib.parse

HEALTH_READY = "/v2/health/ready"  # the server is ready: every model it serves is loaded


def _name(model: str) -> str:
    return urllib.parse.quote(model, safe="")


def v1_model(model: str) -> str:
    """KServe v1 model status (ready when it answers 200)."""
    return f"/v1/models/{_name(model)}"


def v1_predict(model: str) -> str:
    """KServe v1 prediction: ``{"instances": [...]}`` in, ``{"predictions": [...]}`` out."""
    return f"{v1_model(model)}:predict"


def v1_metadata(model: str) -> str:
    """TF Serving's model metadata (each signature's inputs and outputs), which tfkfp serve
    answers beside KServe v1."""
    return f"{v1_model(model)}/metadata"


def v2_model(model: str) -> str:
    """Open Inference Protocol model metadata: ``name``, ``versions``, ``inputs``,
    ``outputs``."""
    return f"/v2/models/{_name(model)}"


def v2_model_ready(model: str) -> str:
    return f"/v2/models/{_name(model)}/ready"


def v2_infer(model: str) -> str:
    """Open Inference Protocol inference: ``{"inputs": [...]}`` in, ``{"outputs": [...]}``."""
    return f"/v2/models/{_name(model)}/infer"
