import os

import pytest

from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.parity import QualityGateError
from tfkfp.components.export_tflite.core import export_tflite


def test_needs_a_mode_or_a_quantized_model(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="'auto' exports the mode freeze_quantize "
                       "chose: pass its quantized model, or name a mode"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"))
    with pytest.raises(QuantizeInputError, match="either quantization 'int8' .* not both"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"), quantization="int8",
                      quantized_dir=str(tmp_path))
    assert not os.listdir(tmp_path)


def test_an_unknown_mode(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="quantization 'int3' is not one of none, "
                       "dynamic, float16, int8, int16x8, auto"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"), quantization="int3")


def test_a_folder_that_is_not_a_savedmodel(demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="is not a SavedModel"):
        export_tflite(str(tmp_path), demo_dataset, str(tmp_path / "b"), quantization="none")


def test_a_quantized_folder_without_a_tflite_model(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="has no model.tflite: expected the "
                                                 "tflite_model folder"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"),
                      quantized_dir=str(tmp_path))


def test_a_signature_that_does_not_exist(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="no signature 'predict'"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"), quantization="none",
                      signature="predict")


def test_min_agreement_outside_zero_to_one(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match=r"min_agreement 1.5 is outside \[0, 1\]"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"), quantization="none",
                      min_agreement=1.5)


@pytest.mark.slow
def test_the_gate_fails_when_set_impossibly_tight_and_writes_nothing(
        dynamic_dir, demo_model, demo_dataset, tmp_path):
    with pytest.raises(QualityGateError, match=r"export gate \(dynamic\) of model .*: "
                                               r"accuracy \d\.\d+ vs "
                                               r"\d\.\d+ .* above max_accuracy_drop -50\.00"):
        export_tflite(demo_model, demo_dataset, str(tmp_path / "b"), quantized_dir=dynamic_dir,
                      max_accuracy_drop=-0.5)
    assert not os.listdir(tmp_path)


def test_the_options_object_or_keyword_settings_not_both(tmp_path):
    from tfkfp.components.export_tflite.options import ExportOptions

    options = ExportOptions(quantization="int8")
    with pytest.raises(TypeError, match="give ExportOptions or keyword settings, not both"):
        export_tflite(str(tmp_path), str(tmp_path), str(tmp_path / "b"), options,
                      quantization="none")
    with pytest.raises(TypeError, match="quantisation: not a setting of ExportOptions"):
        export_tflite(str(tmp_path), str(tmp_path), str(tmp_path / "b"), quantisation="none")
    assert not os.listdir(tmp_path)
