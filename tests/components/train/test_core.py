import numpy as np
import pytest

from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.model import savedmodel
from tfkfp.components.train.core import train


def predictions(model_dir, dataset, signature="serving_raw"):
    import tensorflow as tf

    loaded = tf.saved_model.load(model_dir)
    out = []
    for features, _ in make_dataset(dataset, mode="eval", batch_size=200):
        out.append(loaded.signatures[signature](**features)["probabilities"].numpy())
    return np.concatenate(out)


@pytest.mark.parametrize("strategy,replicas", [("default", 1), ("one_device", 1),
                                               ("mirrored", 2)])
def test_in_process_strategies_learn_the_digits(demo_dataset, tmp_path, strategy, replicas):
    result = train(demo_dataset, str(tmp_path / "model"), strategy=strategy, epochs=4,
                   batch_size=32, target_value=0.8)
    assert result.figures["replicas"] == replicas
    assert result.figures["global_batch_size"] == 32 * replicas
    assert result.figures["eval_accuracy"] > 0.9
    assert result.figures["seconds_to_target"] is not None
    assert len(result.history["val_accuracy"]) == 4
    assert 0.0 <= result.figures["input_wait_fraction"] <= 1.0
    assert result.metrics()["examples_per_second"] > 0


def test_exported_model_serves_what_training_measured(demo_dataset, tmp_path):
    result = train(demo_dataset, str(tmp_path / "model"), epochs=3, hidden_units="64")
    import tensorflow as tf

    labels = np.concatenate([y.numpy() for _, y in make_dataset(demo_dataset, mode="eval")])
    probs = predictions(result.model_dir, demo_dataset)
    accuracy = float((probs.argmax(1) == labels).mean())
    assert accuracy == pytest.approx(result.figures["eval_accuracy"], abs=1e-6)
    meta = savedmodel.load_metadata(result.model_dir)
    assert meta["strategy"] == "default" and meta["labels"] == [str(i) for i in range(10)]
    assert result.metadata()["signatures"] == ["serving_default", "serving_raw"]
    assert tf.io.gfile.exists(f"{result.model_dir}/assets/labels.txt")
    summary = result.classification()  # what the component logs as ClassificationMetrics
    assert summary["classes"] == [str(i) for i in range(10)]
    expected = np.zeros((10, 10), int)
    np.add.at(expected, (labels, probs.argmax(1)), 1)
    assert summary["matrix"] == expected.tolist()
    assert summary["examples"] == len(labels)
    assert summary["roc"] is None  # ten classes: no ROC curve


def test_user_model_fn_is_trained_and_exported(demo_dataset, tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        "import tf_keras\n"
        "def tiny(schema, num_classes):\n"
        "    inputs = {c.name: tf_keras.Input((), name=c.name, dtype=c.dtype)\n"
        "              for c in schema.features}\n"
        "    x = tf_keras.layers.Concatenate()([tf_keras.layers.Reshape((1,))(\n"
        "        tf_keras.layers.Rescaling(1 / 16)(v)) for v in inputs.values()])\n"
        "    return tf_keras.Model(inputs, tf_keras.layers.Dense(num_classes,\n"
        "                          activation='softmax')(x))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = train(demo_dataset, str(tmp_path / "model"), model_fn="my_models:tiny", epochs=3,
                   learning_rate=0.01)
    assert result.figures["parameters"] == 64 * 10 + 10
    assert result.figures["eval_accuracy"] > 0.8


def test_cnn_learns_from_images(image_dataset, tmp_path):
    result = train(image_dataset, str(tmp_path / "model"), model_name="cnn", epochs=10,
                   hidden_units="64", learning_rate=0.003)
    assert result.figures["eval_accuracy"] > 0.7
    assert predictions(result.model_dir, image_dataset).shape[1] == 10


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_keras_applications_build_for_small_images(image_dataset, name):
    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.training.config import TrainConfig
    from tfkfp.components.common.training.models import build_model

    config = TrainConfig(image_dataset, "unused", model_name=name)
    model = build_model(config, Schema.load(image_dataset), {})
    assert model.output_shape == (None, 10)
    assert model.count_params() > 1_000_000


def test_performance_knobs_train(demo_dataset, tmp_path):
    result = train(demo_dataset, str(tmp_path / "model"), epochs=3, precision="mixed_bfloat16",
                   jit_compile=True, steps_per_execution=5, cache=True, shuffle_buffer=500,
                   hidden_units="64", seed=1)
    probs = predictions(result.model_dir, demo_dataset)
    assert probs.dtype == np.float32
    assert result.figures["eval_accuracy"] > 0.7  # bfloat16 learns a little slower


def test_vertex_directories_take_the_place_of_the_defaults(demo_dataset, tmp_path,
                                                           monkeypatch):
    monkeypatch.setenv("AIP_MODEL_DIR", str(tmp_path / "vertex-model"))
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", str(tmp_path / "vertex-ckpt"))
    monkeypatch.setenv("AIP_TENSORBOARD_LOG_DIR", str(tmp_path / "vertex-tb"))
    result = train(demo_dataset, str(tmp_path / "model"), epochs=1, steps_per_epoch=3,
                   hidden_units="16")
    assert result.model_dir == str(tmp_path / "vertex-model")
    assert savedmodel.is_savedmodel(result.model_dir)
    assert not (tmp_path / "model").exists()
    assert (tmp_path / "vertex-ckpt" / "ckpt-1.index").exists()
    assert list((tmp_path / "vertex-tb").rglob("events.out.tfevents.*"))


def test_rerunning_a_finished_run_exports_from_its_checkpoint(demo_dataset, tmp_path):
    options = {"epochs": 2, "hidden_units": "16", "steps_per_epoch": 5,
               "checkpoint_dir": str(tmp_path / "ckpt")}
    first = train(demo_dataset, str(tmp_path / "first"), **options)
    again = train(demo_dataset, str(tmp_path / "again"), **options)  # the same call, twice
    assert again.figures["initial_epoch"] == 2
    assert again.history == first.history
    assert again.figures["eval_accuracy"] == pytest.approx(first.figures["eval_accuracy"],
                                                           abs=1e-6)
    np.testing.assert_allclose(predictions(again.model_dir, demo_dataset),
                               predictions(first.model_dir, demo_dataset), atol=1e-6)
    assert "examples_per_second" not in again.metrics()
    assert "none in this run" in again.markdown()


def test_half_precision_trains_float_columns_with_gaps_kept_in_float32(table_csv, tmp_path):
    """mixed_bfloat16 (a remedy diagnose_bottleneck gives) on float columns: the gap filling
    and normalisation run in float32, where bfloat16 would keep 8 bits of a raw value."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    path, _ = table_csv
    data = str(tmp_path / "ds")
    shard_tfrecords(path, data, label="animal", keys=["id"])
    result = train(data, str(tmp_path / "model"), epochs=1, precision="mixed_bfloat16",
                   hidden_units="16", seed=1)
    probs = predictions(result.model_dir, data)
    assert probs.dtype == np.float32 and np.isfinite(probs).all()


def test_the_input_wait_measure_changes_no_weight_and_sees_a_slow_input(demo_dataset,
                                                                        monkeypatch):
    """The blocked share: small for the demo's pipeline, most of the step when each batch
    takes far longer to come than the step takes (ratios, no time limit)."""
    import time

    import tensorflow as tf

    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.training import models
    from tfkfp.components.common.training.config import TrainConfig
    from tfkfp.components.train import loop

    config = TrainConfig(demo_dataset, "", batch_size=32, hidden_units="16")
    strategy = tf.distribute.get_strategy()
    schema, task = models.task_for(config, Schema.load(demo_dataset))
    model = models.compiled_model(config, schema, strategy, task)
    before = [v.numpy().copy() for v in model.variables]
    assert 0.0 <= loop._input_wait(model, strategy, config, schema, 32, budget_seconds=0.2) < 1
    for old, new in zip(before, model.variables):
        np.testing.assert_array_equal(old, new.numpy())

    def slow(*args, **kwargs):  # every streamed batch 50 ms late; the held one is cached
        def late(features, labels):
            nap = tf.py_function(lambda: time.sleep(0.05) or 0.0, [], tf.float32)
            return features, labels + tf.cast(nap * 0, labels.dtype)

        return make_dataset(*args, **kwargs).map(late)

    monkeypatch.setattr(loop, "make_dataset", slow)
    assert loop._input_wait(model, strategy, config, schema, 32, fewest=10, most=10) > 0.5
