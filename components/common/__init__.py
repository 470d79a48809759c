"""Shared helpers for the components, one room per concern: platform (URIs and object
stores, CPUs, progress, signals, Kubernetes and Vertex AI jobs), data (the Dataset contract,
its readers and encoders), model (the SavedModel contract and the model runtime), tflite
(freezing, converting, feeding and parity in LiteRT), training (the training request and its
checks), endpoint (calling a serving endpoint), beam (the suite's models inside Beam jobs) and
charts (the steps' charts).

Nothing here imports kfp or a component package; TensorFlow is imported only where a helper
needs it.
"""
