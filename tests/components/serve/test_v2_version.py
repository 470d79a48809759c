"""``tfkfp serve``'s Open Inference Protocol answers carry ``model_version``: the version
folder's number where the model's path ends in one, else the artifact's fingerprint (a
SavedModel's as TensorFlow prints it, a TFLite model's file digest), none without either."""

import asyncio
import os
import shutil

import numpy as np
import pytest

from tfkfp.components.common.model.version import FINGERPRINT_FILE, answered_version


def v2_answer(model_uri: str):
    """One v2 request answered in process by the server's model, as REST would send it."""
    from kserve.protocol.infer_type import InferInput, InferRequest

    from tfkfp.components.serve.model import TfkfpModel
    from tfkfp.components.serve.options import ServeOptions

    model = TfkfpModel(model_uri, ServeOptions(max_batch_size=4), threads=1)
    model._load()  # in this thread: the server loads it in the background
    assert model.ready, model.failure
    inputs = []
    for name, values, datatype in (("x", np.array([0.5, np.nan], np.float32), "FP32"),
                                   ("colour", np.array(["blue", ""], object), "BYTES")):
        tensor = InferInput(name, [2], datatype)
        tensor.set_data_from_numpy(values, binary_data=False)
        inputs.append(tensor)
    try:
        response = asyncio.run(model.predict(InferRequest("model", inputs)))
    finally:
        model.stop()
    return response.to_rest()[0]


def test_a_savedmodel_answers_with_its_tensorflow_fingerprint(string_table):
    import tensorflow as tf

    body = v2_answer(string_table.model)
    fingerprint = tf.saved_model.experimental.read_fingerprint(string_table.model)
    assert body["model_version"] == fingerprint.singleprint()
    assert [o["name"] for o in body["outputs"]][:1] == ["class"]


def test_a_version_folder_names_the_version(string_table, tmp_path):
    versioned = tmp_path / "digits" / "3"
    shutil.copytree(string_table.model, versioned)
    assert v2_answer(str(versioned))["model_version"] == "3"


def test_a_savedmodel_without_a_fingerprint_answers_no_version(string_table, tmp_path):
    bare = tmp_path / "model"
    shutil.copytree(string_table.model, bare)
    os.remove(bare / FINGERPRINT_FILE)
    assert v2_answer(str(bare))["model_version"] is None


def test_a_tflite_bundle_answers_with_its_model_files_digest(tflite_bundle, tmp_path):
    version = v2_answer(tflite_bundle)["model_version"]
    assert version == answered_version(os.path.join(tflite_bundle, "model.tflite"))
    assert version.startswith("sha256:") and len(version) == len("sha256:") + 16
    changed = tmp_path / "bundle"
    shutil.copytree(tflite_bundle, changed)
    with open(changed / "model.tflite", "ab") as f:
        f.write(b"\0")
    assert answered_version(str(changed)) != version


@pytest.mark.parametrize("uri, version", [("gs://b/models/digits/12", "12"),
                                          ("/m/digits/0007/", "7")])
def test_a_path_ending_in_a_number_is_that_version_without_reading_it(uri, version):
    assert answered_version(uri) == version
