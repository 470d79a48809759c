"""Fixtures of the serve tests: the string model (string_tables) and its TFLite bundle, and
the mixed table (floats with gaps, whole numbers, a string) for packed bundles."""

import pytest
from mixed_table import mixed_table  # noqa: F401  (a session fixture)
from string_tables import string_table  # noqa: F401  (a session fixture)


@pytest.fixture(scope="module")
def tflite_bundle(string_table, tmp_path_factory):  # noqa: F811
    """The string model as a float TFLite bundle (model.tflite, labels, signature.json)."""
    from tfkfp.components.export_tflite.core import export_tflite

    out = str(tmp_path_factory.mktemp("serve_tflite") / "bundle")
    export_tflite(string_table.model, string_table.dataset, out, quantization="none",
                  eval_examples=200)
    return out
