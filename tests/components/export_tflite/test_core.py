import json
import os

import numpy as np
import pytest

from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import litert
from tfkfp.components.common.tflite import metadata as tflite_metadata
from tfkfp.components.export_tflite.core import export_tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def float16_bundle(demo_model, demo_dataset, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("f16") / "bundle")
    return export_tflite(demo_model, demo_dataset, out, quantization="float16")


def test_the_bundle_holds_what_an_app_needs(float16_bundle):
    out = float16_bundle.output_dir
    assert sorted(os.listdir(out)) == ["labels.txt", "model.tflite", "schema.json",
                                       "signature.json", "validation.json"]
    assert open(os.path.join(out, "labels.txt")).read().split() == [str(i) for i in range(10)]
    sig = json.load(open(os.path.join(out, "signature.json")))
    assert sig["signature"] == "serving_raw" and sig["quantization"] == "float16"
    # the packed layout: the 64 whole-number pixels in one int32 block, in the schema's order
    assert sorted(sig["inputs"]) == ["ints"]
    assert sig["inputs"]["ints"]["columns"] == [f"pixel_{i}" for i in range(64)]
    assert sig["inputs"]["ints"]["dtype"] == "int32"
    assert sig["inputs"]["ints"]["shape"] == [-1, 64]
    assert "raw values" in sig["inputs"]["ints"]["normalization"]
    assert sig["outputs"]["probabilities"] == {"dtype": "float32", "shape": [-1, 10]}
    assert sig["outputs"]["classes"]["dtype"] == "string"
    validation = json.load(open(os.path.join(out, "validation.json")))
    assert validation["agreement"] == float16_bundle.figures.agreement


def test_float16_agrees_with_the_savedmodel_in_litert(float16_bundle, demo_model,
                                                      demo_dataset):
    f = float16_bundle.figures
    assert f.agreement == 1.0 and f.max_abs_diff < 5e-3 and f.mean_abs_diff < 1e-3
    assert f.accuracy == f.reference_accuracy > 0.9
    # the bundle's model, run again here, gives the SavedModel's classes
    _, fn = tflite_inputs.load_signature(demo_model, "serving_raw")
    names = sorted(tflite_inputs.signature_inputs(fn))
    examples = tflite_inputs.load_examples(demo_dataset, "eval", 64, names, "test")
    runner = litert.signature_runner(litert.load_interpreter(
        os.path.join(float16_bundle.output_dir, "model.tflite")), "serving_raw")
    got = litert.run(runner, _packed(float16_bundle.output_dir, examples.features),
                     batch_size=16)
    want = tflite_inputs.reference_outputs(fn, examples)
    np.testing.assert_array_equal(got["classes"], want["classes"])
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=5e-3)


def _packed(bundle, features):
    """The pixels as the bundle's one int32 block, in the order signature.json gives."""
    columns = json.load(open(os.path.join(bundle, "signature.json")))["inputs"]["ints"]["columns"]
    return {"ints": np.stack([features[c] for c in columns], axis=1).astype(np.int32)}


def test_confusion_matrix_is_the_tflite_models_on_the_validation_examples(
        float16_bundle, demo_model, demo_dataset):
    summary = float16_bundle.classification
    assert summary["classes"] == [str(i) for i in range(10)] and summary["roc"] is None
    _, fn = tflite_inputs.load_signature(demo_model, "serving_raw")
    examples = tflite_inputs.load_examples(demo_dataset, "eval", 1000,
                                           sorted(tflite_inputs.signature_inputs(fn)), "test")
    runner = litert.signature_runner(litert.load_interpreter(
        os.path.join(float16_bundle.output_dir, "model.tflite")), "serving_raw")
    predicted = litert.run(runner, _packed(float16_bundle.output_dir,
                                           examples.features))["class_ids"]
    expected = np.zeros((10, 10), int)
    np.add.at(expected, (examples.labels.astype(int), predicted.astype(int)), 1)
    assert summary["matrix"] == expected.tolist()
    assert summary["examples"] == float16_bundle.figures.examples == len(examples)
    assert "classification" not in float16_bundle.metadata()  # the bundle's metadata as before


def test_metrics_and_report(float16_bundle):
    metrics = float16_bundle.metrics()
    assert set(metrics) >= {"accuracy", "savedmodel_accuracy", "agreement", "max_abs_diff",
                            "mean_abs_diff", "size_bytes"}
    assert "| top-1 agreement | 1.0000 (min 0.9800) |" in float16_bundle.markdown()
    assert float16_bundle.metadata()["gate"] == {"max_accuracy_drop": 0.01,
                                                 "min_agreement": 0.98,
                                                 "max_relative_error": 0.05,
                                                 "max_rmse_increase": 0.05}


def test_exports_the_model_chosen_by_freeze_quantize(dynamic_dir, demo_model, demo_dataset,
                                                     tmp_path):
    result = export_tflite(demo_model, demo_dataset, str(tmp_path / "b"),
                           quantized_dir=dynamic_dir, eval_examples=100)
    assert result.mode == "dynamic" and result.source == dynamic_dir
    shipped = open(tmp_path / "b" / "model.tflite", "rb").read()
    app = tflite_metadata.read(shipped)  # freeze_quantize's model with the app's JSON in it
    assert app["quantization"] == "dynamic"
    assert tflite_metadata.embed(open(os.path.join(dynamic_dir, "model.tflite"), "rb").read(),
                                 app) == shipped
    assert result.figures.examples == 100
