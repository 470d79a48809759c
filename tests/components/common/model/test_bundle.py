"""The TFLite bundle contract (common.model.bundle): what it writes is what it reads back,
``kind_of`` tells a SavedModel from a bundle, and the Predictor takes a bundle's task from its
signature.json, falling back to the output names only where the bundle does not say."""

import json

import numpy as np
import pytest

from tfkfp.components.common.model import bundle
from tfkfp.components.common.model.bundle import Bundle, BundleError
from tfkfp.components.common.model.predictor import ModelInputError, load_predictor


@pytest.fixture(scope="module")
def two_output_tflite(tmp_path_factory):
    """A TFLite model whose serving_raw returns ``value`` (2x) and ``extra``: by its output
    names alone it is no regressor."""
    import tensorflow as tf

    module = tf.Module()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def raw(x):
        return {"value": 2.0 * x, "extra": x + 1.0}

    saved = str(tmp_path_factory.mktemp("two_outputs") / "model")
    tf.saved_model.save(module, saved, signatures={"serving_raw": raw.get_concrete_function()})
    converter = tf.lite.TFLiteConverter.from_saved_model(saved, signature_keys=["serving_raw"])
    return converter.convert()


def test_what_is_written_is_read_back(tmp_path):
    from tfkfp.components.common.data.schema import Column, Schema

    schema = Schema((Column("x", "float32"), Column("y", "string", role="label",
                                                     vocabulary=("a", "b"))))
    written = Bundle.write(str(tmp_path / "b"), b"tflite", {"task": "classification"},
                           {"accuracy": 1.0}, ["a", "b"], schema)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(bundle.FILES)
    assert written.signature() == {"task": "classification"}
    assert written.task() == "classification"
    assert written.labels() == ["a", "b"]
    assert written.schema() == schema
    assert bundle.kind_of(written.folder) == bundle.TFLITE
    assert Bundle.of_model_file(written.path(bundle.MODEL_FILE)) == written


def test_a_bundle_without_its_optional_files_says_none(tmp_path):
    written = Bundle.write(str(tmp_path / "b"), b"tflite", {"task": "other"}, {})
    assert written.labels() is None and written.schema() is None and written.task() is None
    assert Bundle(str(tmp_path)).signature() is None
    (tmp_path / bundle.SIGNATURE_FILE).write_text("[1]")
    with pytest.raises(BundleError, match="a list, not an object"):
        Bundle(str(tmp_path)).signature()


def test_a_folder_is_a_savedmodel_a_bundle_or_neither(tmp_path):
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "saved_model.pb").write_bytes(b"")
    (tmp_path / "saved" / bundle.MODEL_FILE).write_bytes(b"")  # a SavedModel all the same
    assert bundle.kind_of(str(tmp_path / "saved")) == bundle.SAVEDMODEL
    (tmp_path / "notes.txt").write_text("x")
    assert bundle.kind_of(str(tmp_path)) == ""
    assert bundle.kind_of(str(tmp_path / "notes.txt")) == ""
    assert "it has ['notes.txt', 'saved']" in bundle.neither(str(tmp_path))


def test_the_predictor_reads_a_bundles_task_from_its_signature(tmp_path, two_output_tflite):
    folder = str(tmp_path / "regressor")
    Bundle.write(folder, two_output_tflite, {"task": "regression"}, {})
    predictor = load_predictor(folder)
    assert predictor.task == "regression" and predictor.regressor and predictor.labels == []
    got = predictor.predict({"x": np.array([1.0, -2.5], np.float32)})
    np.testing.assert_allclose(got, [2.0, -5.0])


def test_a_bundle_that_does_not_say_is_read_by_its_output_names(tmp_path, two_output_tflite):
    (tmp_path / bundle.MODEL_FILE).write_bytes(two_output_tflite)
    with pytest.raises(ModelInputError, match=r"a classification model but has outputs "
                                              r"\['extra', 'value'\]; expected 'probabilities'"):
        load_predictor(str(tmp_path))
    (tmp_path / bundle.SIGNATURE_FILE).write_text(json.dumps({"task": "regression"}))
    assert load_predictor(str(tmp_path)).regressor
