"""Batch prediction with a tfkfp SavedModel or TFLite model over TFRecord, CSV or JSON Lines."""
