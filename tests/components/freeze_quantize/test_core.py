import json
import os

import numpy as np
import pytest

from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.freeze_quantize import freeze

pytestmark = pytest.mark.slow


def eval_examples(model_dir, dataset, limit=1000):
    _, fn = tflite_inputs.load_signature(model_dir, "serving_raw")
    names = sorted(tflite_inputs.signature_inputs(fn))
    examples = tflite_inputs.load_examples(dataset, "eval", limit, names, "test")
    return fn, examples


def test_every_mode_converts_and_runs_in_litert(auto_result):
    assert [f.mode for f in auto_result.figures] == list(tflite_modes.MODES)
    for f in auto_result.figures:
        assert f.size_bytes > 0 and f.examples > 100
        assert f.accuracy > 0.85, f
        assert f.latency_example_ms > 0 and f.latency_batch_ms > 0
        assert f.batch_size == 32


def test_int8_and_dynamic_are_at_most_three_tenths_of_float32(auto_result):
    sizes = {f.mode: f.size_bytes for f in auto_result.figures}
    assert sizes["int8"] <= 0.3 * sizes["none"], sizes
    assert sizes["dynamic"] <= 0.3 * sizes["none"], sizes
    assert sizes["float16"] < 0.6 * sizes["none"], sizes


def test_auto_keeps_the_smallest_mode_within_the_accuracy_drop(auto_result):
    within = [f for f in auto_result.figures if f.accuracy_drop <= 0.01]
    assert auto_result.mode == min(within, key=lambda f: f.size_bytes).mode
    saved = json.load(open(os.path.join(auto_result.tflite_dir, "quantization.json")))
    assert saved["mode"] == auto_result.mode
    assert set(saved["modes"]) == set(tflite_modes.MODES)
    content = open(os.path.join(auto_result.tflite_dir, "model.tflite"), "rb").read()
    assert len(content) == auto_result.chosen.size_bytes


def test_float16_keeps_parity_with_the_savedmodel(auto_result):
    f16 = next(f for f in auto_result.figures if f.mode == "float16")
    assert f16.agreement == 1.0
    assert f16.max_abs_diff < 5e-3
    assert abs(f16.accuracy_drop) < 1e-9


def test_frozen_graph_loads_and_agrees_with_the_savedmodel(auto_result, wide_model,
                                                           demo_dataset):
    spec = json.load(open(os.path.join(auto_result.frozen_dir, "frozen_graph.json")))
    graph_def = freeze.load_graph_def(os.path.join(auto_result.frozen_dir, "frozen_graph.pb"))
    fn, examples = eval_examples(wide_model, demo_dataset)
    got = freeze.run_graph(graph_def, spec["inputs"], spec["outputs"], examples)
    want = tflite_inputs.reference_outputs(fn, examples)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=1e-5)
    np.testing.assert_array_equal(got["class_ids"], want["class_ids"])
    np.testing.assert_array_equal(got["classes"], want["classes"])
    ops = {n.op for n in graph_def.node}
    assert not ops & {"VarHandleOp", "ReadVariableOp", "StatefulPartitionedCall"}
    assert spec["nodes"]["after"] < spec["nodes"]["before"]
    assert auto_result.frozen_max_abs_diff < 1e-5


def test_metrics_and_report_cover_every_mode(auto_result):
    metrics = auto_result.metrics()
    for mode in tflite_modes.MODES:
        for name in ("size_bytes", "accuracy", "agreement", "latency_ms_batch"):
            assert f"{mode}_{name}" in metrics
    text = auto_result.markdown()
    assert f"**{auto_result.mode}** (chosen)" in text
    assert text.count("\n| int8 |") + text.count("**int8**") == 1
    assert "### Frozen graph" in text
    assert auto_result.metadata()["modes"]["none"]["size_bytes"] > 0


def test_batch_norms_are_folded_and_the_frozen_graph_still_agrees(tmp_path):
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(2)
    dense_in, image_in = tf_keras.Input((8,)), tf_keras.Input((8, 8, 3))
    x = tf_keras.layers.BatchNormalization()(tf_keras.layers.Dense(16)(dense_in))
    y = tf_keras.layers.BatchNormalization()(tf_keras.layers.Conv2D(4, 3)(image_in))
    y = tf_keras.layers.GlobalAveragePooling2D()(y)
    model = tf_keras.Model([dense_in, image_in], tf_keras.layers.Concatenate()([x, y]))
    model.compile("sgd", "mse")
    model.fit([np.random.rand(64, 8), np.random.rand(64, 8, 8, 3)], np.random.rand(64, 20),
              epochs=1, verbose=0)  # moves the moving statistics away from 0 and 1
    module = tf.Module()
    module.model = model

    @tf.function(input_signature=[{"a": tf.TensorSpec([None, 8], tf.float32, name="a"),
                                   "b": tf.TensorSpec([None, 8, 8, 3], tf.float32, name="b")}])
    def serve(d):
        return {"out": model([d["a"], d["b"]], training=False)}

    tf.saved_model.save(module, str(tmp_path / "bn"), signatures={"s": serve})
    loaded = tf.saved_model.load(str(tmp_path / "bn"))
    fn = loaded.signatures["s"]
    frozen = freeze.freeze(loaded, fn)
    assert not any(op.startswith("FusedBatchNorm") for op in frozen.ops_after), frozen.ops_after
    assert frozen.ops_before.get("FusedBatchNormV3") == 1
    rng = np.random.default_rng(0)
    feats = {"a": rng.random((5, 8), dtype=np.float32),
             "b": rng.random((5, 8, 8, 3), dtype=np.float32)}
    got = freeze.run_graph(frozen.graph_def, frozen.inputs, frozen.outputs,
                           tflite_inputs.Examples(feats, np.zeros(5)))
    np.testing.assert_allclose(got["out"], fn(**feats)["out"].numpy(), atol=1e-4)
