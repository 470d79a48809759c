import pytest
from mixed_table import mixed_table  # noqa: F401  (a session fixture)
from string_tables import string_table  # noqa: F401  (a session fixture)


@pytest.fixture(scope="session")
def dynamic_dir(demo_model, demo_dataset, tmp_path_factory):
    """freeze_quantize's tflite_model folder for the demo model in dynamic mode."""
    from tfkfp.components.common.tflite.parity import Timing
    from tfkfp.components.freeze_quantize.core import freeze_quantize

    out = tmp_path_factory.mktemp("dynamic")
    freeze_quantize(demo_model, demo_dataset, str(out / "tflite"), str(out / "frozen"),
                    quantization="dynamic", timing=Timing(16, 2))
    return str(out / "tflite")
