"""Export a deployable TFLite bundle and gate it on parity with the SavedModel in LiteRT."""
