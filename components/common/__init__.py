"""Shared helpers for the components: schema, tf.data reader, URIs, Example encoding.

Nothing here imports kfp; TensorFlow is imported only where a helper needs it.
"""
