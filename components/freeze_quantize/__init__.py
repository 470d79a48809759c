"""Freeze a SavedModel into an inference graph and quantize it to TFLite, measuring each mode."""
