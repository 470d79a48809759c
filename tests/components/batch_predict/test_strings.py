"""batch_predict with a TFLite bundle (and the SavedModel) of a model with a Unicode string
feature and an imputed float feature, on records with NaNs, empty and unknown strings."""

import json
import os

import numpy as np
import pytest
from string_tables import confident, known_colour, probe_rows, savedmodel_outputs

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model.predictor import load_predictor
from tfkfp.components.export_tflite.core import export_tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def int8_bundle(string_table, tmp_path_factory):
    """int8 with float inputs: the input is quantized at the model's entry, so the runner
    must feed a gap as the fill signature.json gives."""
    out = str(tmp_path_factory.mktemp("strings_bundle") / "bundle")
    export_tflite(string_table.model, string_table.dataset, out, quantization="int8",
                  calibration_examples=100)
    return out


@pytest.fixture(scope="module")
def gap_records(string_table, tmp_path_factory):
    """The probe rows as a TFRecord file with an id key, schema.json beside it."""
    import tensorflow as tf

    folder = tmp_path_factory.mktemp("gap_records")
    Schema.load(string_table.dataset).save(str(folder))
    rows = probe_rows()
    with tf.io.TFRecordWriter(str(folder / "rows.tfrecord")) as writer:
        for i, (x, colour) in enumerate(zip(rows["x"], rows["colour"])):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
                "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[colour])),
            })).SerializeToString())
    return str(folder / "*.tfrecord"), rows


@pytest.mark.parametrize("which", ["tflite", "savedmodel"])
def test_gaps_and_unknown_strings_are_predicted_like_the_savedmodel(
        which, int8_bundle, gap_records, string_table, tmp_path, read_outputs):
    pattern, rows = gap_records
    model = int8_bundle if which == "tflite" else string_table.model
    result = batch_predict(model, pattern, str(tmp_path / "out"), keys=["id"], top_k=2)
    assert (result.inputs, result.errors) == (len(rows["x"]), 0)
    got = sorted(read_outputs(str(tmp_path / "out")), key=lambda r: r["id"])
    want = savedmodel_outputs(string_table.model, rows)
    sure = confident(want["probabilities"])
    assert sure[known_colour(rows)].mean() >= 0.9
    ids = np.array([r["class_id"] for r in got])
    np.testing.assert_array_equal(ids[sure], want["class_ids"][sure])
    scores = np.array([r["top_scores"][0] for r in got])
    assert np.abs(scores - want["probabilities"].max(1)).max() < 0.12


def test_the_tflite_predictor_feeds_a_gap_as_the_fill(int8_bundle, string_table):
    predictor = load_predictor(int8_bundle)
    assert predictor.inputs["colour"].dtype == "string"
    rows = probe_rows()
    x = np.where(np.isnan(rows["x"]), string_table.fill, rows["x"]).astype(np.float32)
    np.testing.assert_array_equal(predictor.predict(rows), predictor.predict(dict(rows, x=x)))
    signature = json.load(open(os.path.join(int8_bundle, "signature.json")))
    packed = signature["inputs"]["floats"]  # x, in the bundle's one float block
    assert packed["columns"] == ["x"]
    assert packed["missing"]["feed"] == [pytest.approx(string_table.fill, abs=1e-6)]
