"""Shared helpers for the components: schema, tf.data reader, URIs, Example encoding, the
SavedModel contract, LiteRT, and TFLite conversion with its parity checks: freezing with
lookup tables and builtin one-hots (tflite_graph, tflite_rewrite) and how each input is fed,
strings and gaps (tflite_feeding).

Nothing here imports kfp or a component package; TensorFlow is imported only where a helper
needs it.
"""
