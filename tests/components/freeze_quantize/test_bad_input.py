import os

import pytest

from tfkfp.components.common.tflite.convert import ConversionError, convert
from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.parity import QualityGateError
from tfkfp.components.freeze_quantize.core import freeze_quantize


def run(model, dataset, tmp_path, *options, **kwargs):
    return freeze_quantize(model, dataset, str(tmp_path / "tflite"), str(tmp_path / "frozen"),
                           *options, **kwargs)


def assert_nothing_written(tmp_path):
    left = [n for n in os.listdir(tmp_path) if n in ("tflite", "frozen") or n.startswith(".")]
    assert not left, f"a failed run left {left} in {tmp_path}"


def test_a_folder_that_is_not_a_savedmodel(demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match=r"not a SavedModel: expected saved_model\.pb"):
        run(demo_dataset, demo_dataset, tmp_path)
    assert_nothing_written(tmp_path)


def test_a_missing_model_folder(demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="nowhere is not a SavedModel.*found nothing"):
        run(str(tmp_path / "nowhere"), demo_dataset, tmp_path)


def test_a_signature_that_does_not_exist(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match=r"no signature 'serving_rgb'; it has "
                                                 r"\['serving_default', 'serving_raw'\]"):
        run(demo_model, demo_dataset, tmp_path, signature="serving_rgb", quantization="none")
    assert_nothing_written(tmp_path)


def test_a_dataset_whose_schema_does_not_match_the_model(demo_model, table_csv, tmp_path):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    other = str(tmp_path / "other")
    shard_tfrecords(table_csv[0], other, label="animal", keys=["id"])
    with pytest.raises(QuantizeInputError, match=r"signature 'serving_raw' takes inputs that no "
                                                 r"feature column of dataset .* feeds: pixel_0 "
                                                 r"\(int64 \[None\]\), pixel_1 .* and 56 more; "
                                                 r"its feature columns are \['color \(string "
                                                 r"\[None\]\)', 'x \(float32 \[None\]\)', "):
        run(demo_model, other, tmp_path, quantization="dynamic")
    assert_nothing_written(tmp_path)


def test_an_empty_calibration_set(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="calibration_examples 0: the calibration set "
                                                 "would be empty"):
        run(demo_model, demo_dataset, tmp_path, quantization="int8", calibration_examples=0)
    assert_nothing_written(tmp_path)


def test_a_calibration_split_with_no_records(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="calibration data: .*no split 'test'"):
        run(demo_model, demo_dataset, tmp_path, quantization="int8", calibration_split="test")


def test_an_unknown_mode(demo_model, demo_dataset, tmp_path):
    with pytest.raises(QuantizeInputError, match="quantization 'int4' is not one of none, dynamic, "
                                                 "float16, int8, int16x8, auto"):
        run(demo_model, demo_dataset, tmp_path, quantization="int4")


@pytest.mark.slow
def test_an_impossible_accuracy_drop_fails_and_writes_nothing(demo_model, demo_dataset,
                                                             tmp_path):
    with pytest.raises(QualityGateError, match=r"quantization 'float16' of model .*: accuracy .* "
                                               r"above max_accuracy_drop -50\.00 points"):
        run(demo_model, demo_dataset, tmp_path, quantization="float16", max_accuracy_drop=-0.5,
            eval_examples=100)
    assert_nothing_written(tmp_path)


@pytest.mark.slow
def test_an_unsupported_op_is_named_with_the_option_that_converts_it(erf_model):
    with pytest.raises(ConversionError, match=r"op\(s\) Erf have no TFLite builtin kernel; "
                                              r"set select_tf_ops=True \(converter option "
                                              r"SELECT_TF_OPS\)"):
        convert(erf_model, "serving_raw", "none")
    assert len(convert(erf_model, "serving_raw", "none", select_tf_ops=True)) > 0


def test_the_options_object_or_keyword_settings_not_both(tmp_path):
    from tfkfp.components.freeze_quantize.options import QuantizeOptions

    options = QuantizeOptions(quantization="int8")
    with pytest.raises(TypeError, match="give QuantizeOptions or keyword settings, not both"):
        run(str(tmp_path), str(tmp_path), tmp_path, options, eval_examples=5)
    with pytest.raises(QuantizeInputError, match="input_mapping '{' is not JSON"):
        run(str(tmp_path), str(tmp_path), tmp_path, input_mapping="{")
    assert_nothing_written(tmp_path)


def test_a_timing_takes_the_place_of_the_latency_settings_and_is_checked_as_they_are(
        tmp_path):
    from tfkfp.components.common.tflite.parity import Timing

    with pytest.raises(TypeError, match="give timing or latency_runs, not both"):
        run(str(tmp_path), str(tmp_path), tmp_path, latency_runs=3, timing=Timing(8, 2))
    with pytest.raises(QuantizeInputError, match="^latency_batch_size 0 and latency_runs 2: "
                                                 "each must be at least 1"):
        run(str(tmp_path), str(tmp_path), tmp_path, timing=Timing(0, 2))
    assert_nothing_written(tmp_path)
