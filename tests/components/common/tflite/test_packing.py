"""The packed layout's plan and feeding (common.tflite.packing), and the layout's check."""

import numpy as np
import pytest

from tfkfp.components.common.tflite import packing
from tfkfp.components.common.tflite.options import QuantizeInputError
from tfkfp.components.export_tflite.options import ExportOptions
from tfkfp.components.freeze_quantize.options import QuantizeOptions


def _specs():
    import tensorflow as tf

    return {"b": tf.TensorSpec([None], tf.float32), "n": tf.TensorSpec([None], tf.int64),
            "a": tf.TensorSpec([None], tf.float32), "s": tf.TensorSpec([None], tf.string),
            "img": tf.TensorSpec([None, 4, 4, 1], tf.float32),
            "floats": tf.TensorSpec([None], tf.float64)}


def test_scalar_numbers_are_packed_per_dtype_in_the_schema_order():
    plan = packing.plan(_specs(), ["a", "n", "s", "b", "img", "floats"], "packed")
    # a float64 input named "floats" stays its own: the block's name steps aside
    assert plan.blocks == (packing.Block("floats__packed", "float32", ("a", "b")),
                           packing.Block("ints", "int32", ("n",)))
    assert not packing.plan(_specs(), ["a", "b"], "columns")


def test_feeding_stacks_the_columns_and_keeps_the_other_inputs():
    plan = packing.plan(_specs(), ["a", "n", "s", "b", "img", "floats"], "packed")
    features = {"a": np.array([1.0, np.nan], np.float32), "b": np.array([3.0, 4.0], np.float32),
                "n": np.array([7, 8]), "s": np.array([b"x", b""], object),
                "img": np.zeros((2, 4, 4, 1), np.float32), "floats": np.zeros(2)}
    fed = plan.feed(features)
    assert sorted(fed) == ["floats", "floats__packed", "img", "ints", "s"]
    np.testing.assert_array_equal(fed["floats__packed"], [[1.0, 3.0], [np.nan, 4.0]])
    assert fed["ints"].dtype == np.int32 and fed["ints"].tolist() == [[7], [8]]
    fills = plan.fills({"b": np.array([0.5], np.float32), "img": np.array([0.0])})
    np.testing.assert_array_equal(fills["floats__packed"], [np.nan, 0.5])  # a not imputed
    assert "ints" not in fills and "img" in fills


def test_a_whole_number_beyond_int32_is_refused_naming_row_and_column():
    plan = packing.plan(_specs(), ["n"], "packed")
    with pytest.raises(QuantizeInputError, match=r"row 1, column 'n'.*'columns'"):
        plan.feed({"n": np.array([1, 2 ** 31]), "a": np.zeros(2), "b": np.zeros(2)})


def test_the_blocks_read_back_from_their_description():
    plan = packing.plan(_specs(), ["a", "n", "b"], "packed")
    assert packing.from_description(packing.describe(plan)) == plan


@pytest.mark.parametrize("check", [
    lambda layout: QuantizeOptions(quantization="auto", calibration_examples=100,
                                   eval_examples=100, input_layout=layout),
    lambda layout: ExportOptions(quantization="int8", quantized_dir="", eval_examples=100,
                                 min_agreement=0.98, input_layout=layout)])
def test_an_unknown_layout_is_refused_naming_the_allowed_ones(check):
    check("columns")
    with pytest.raises(QuantizeInputError, match="input_layout 'pack' is not one of packed, "
                                                 "columns"):
        check("pack")
