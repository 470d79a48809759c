"""Shared helpers for the components: schema, tf.data reader, URIs, Example encoding, the
SavedModel contract, LiteRT, and TFLite conversion with its parity checks.

Nothing here imports kfp or a component package; TensorFlow is imported only where a helper
needs it.
"""
