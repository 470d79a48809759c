"""Anchor servers for benchmarks/serving.py, on the same KServe stack as ``tfkfp serve``
(its FastAPI app, DataPlane, body limit and uvicorn settings), so only the model differs:

- ``noop``: answers every v1 instance with a fixed class and score without a model: the
  ceiling of the HTTP and JSON path for the same payload;
- ``predict``: a tf_keras model loaded from a ``.keras`` file and called with
  ``model.predict`` once per request, what a user's first server does;
- ``tffunction``: the issue's "KServe model server, custom model, tf.function per request,
  no batching": the SavedModel's ``serving_raw`` concrete function called once per request
  with one tensor per column, on the event loop, as a KServe custom model is written.

``python -m benchmarks.serving_anchors KIND PORT [KERAS_FILE | SAVEDMODEL]``; ready at
/v2/health/ready.
"""

import os
import sys
from typing import Dict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _top_class(scores) -> Dict:
    """A user's answer body: each row's best class and its score."""
    return {"predictions": [{"class": str(int(s.argmax())), "score": float(s.max())}
                            for s in scores]}


def _model_classes():
    from kserve import Model

    class NoOp(Model):
        def load(self) -> bool:
            self.ready = True
            return True

        async def predict(self, payload, headers: Dict[str, str] | None = None):
            return {"predictions": [{"class": "0", "score": 1.0}
                                    for _ in payload["instances"]]}

    class KerasPredict(Model):
        def __init__(self, name: str, path: str):
            super().__init__(name)
            self.path = path

        def load(self) -> bool:
            import tf_keras

            self.model = tf_keras.models.load_model(self.path)
            self.names = list(self.model.input_names)
            self.ready = True
            return True

        async def predict(self, payload, headers: Dict[str, str] | None = None):
            import numpy as np

            rows = payload["instances"]
            inputs = {n: np.asarray([r[n] for r in rows], dtype=np.float32)
                      for n in self.names}
            scores = self.model.predict(inputs, verbose=0)
            return _top_class(scores)

    class FunctionPerRequest(Model):
        def __init__(self, name: str, path: str):
            super().__init__(name)
            self.path = path

        def load(self) -> bool:
            import tensorflow as tf

            self.function = tf.saved_model.load(self.path).signatures["serving_raw"]
            self.specs = self.function.structured_input_signature[1]
            self.ready = True
            return True

        async def predict(self, payload, headers: Dict[str, str] | None = None):
            import tensorflow as tf

            rows = payload["instances"]
            inputs = {n: tf.constant([r[n] for r in rows], dtype=spec.dtype)
                      for n, spec in self.specs.items()}
            scores = self.function(**inputs)["probabilities"].numpy()
            return _top_class(scores)

    return {"noop": NoOp, "predict": KerasPredict, "tffunction": FunctionPerRequest}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    kind, port = argv[0], int(argv[1])
    sys.argv = sys.argv[:1]  # kserve.model_server parses sys.argv on import
    from tfkfp.components.serve.options import ServeOptions
    from tfkfp.components.serve.server import serve_model

    cls = _model_classes()[kind]
    options = ServeOptions(name="model", host="127.0.0.1", http_port=port)
    serve_model(cls("model", *argv[2:3]), options, rebuild=lambda: cls("model", *argv[2:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
