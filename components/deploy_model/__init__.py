"""deploy_model: put a model behind an endpoint (KServe InferenceService, Vertex AI Endpoint or
an endpoint that already runs), gate it against the model already serving, smoke-test it."""
