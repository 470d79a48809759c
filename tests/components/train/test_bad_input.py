import os
import re
import shutil

import pytest

from conftest import cut_shard_of, flip_byte, write_csv
from tfkfp.components.common.data.damage import DamagedShardError
from tfkfp.components.common.data.dataset import DatasetMismatchError, Manifest
from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.train.core import train, warm_start_from
from tfkfp.components.train.errors import TrainingDiverged


@pytest.mark.parametrize("options,message", [
    ({"strategy": "horovod"}, "strategy 'horovod' is not known; expected one of default"),
    ({"model_name": "vgg"}, "model_name 'vgg' is not known; expected one of mlp, cnn"),
    ({"model_fn": "no_such_module_xyz:build"}, "cannot import 'no_such_module_xyz'"),
    ({"model_fn": "json:no_such_function"}, "has no function 'no_such_function'"),
    ({"model_fn": "just_a_name"}, "not of the form 'package.module:function'"),
    ({"strategy": "parameter_server", "parameter_servers": 0}, "needs 1 to 4 parameter"),
    ({"strategy": "multi_worker_mirrored", "workers": 50}, "allowed 1 to 8 local worker"),
    ({"strategy": "mirrored", "global_batch_size": 1}, "smaller than the 2 replicas"),
    ({"strategy": "mirrored", "global_batch_size": 33}, "does not divide evenly over 2"),
    ({"strategy": "tpu"}, "strategy 'tpu' needs a local or Cloud TPU"),
    ({"batch_size": 0}, "batch_size must be positive"),
    ({"epochs_typo": 3}, "unknown training option(s) ['epochs_typo']"),
    ({"hidden_units": "64,x"}, "hidden_units '64,x' is not a comma-separated list"),
])
def test_bad_requests_fail_before_training(demo_dataset, tmp_path, options, message):
    with pytest.raises(TrainConfigError) as err:
        train(demo_dataset, str(tmp_path / "model"), **options)
    assert message in str(err.value)
    assert not os.path.exists(tmp_path / "model")


def test_unlabeled_data_is_refused(unlabeled_dataset, tmp_path):
    with pytest.raises(SchemaError, match="no label column"):
        train(unlabeled_dataset, str(tmp_path / "model"))


def test_a_shard_cut_on_a_record_boundary_is_refused_naming_it(dataset_copy, tmp_path):
    with pytest.raises(DatasetMismatchError, match=cut_shard_of(dataset_copy, "train", 1, 100)):
        train(dataset_copy, str(tmp_path / "model"), epochs=1)


def test_a_shard_with_a_flipped_byte_fails_training_naming_it(dataset_copy, tmp_path):
    """Its size is unchanged, so the manifest's check passes it; TensorFlow's reader then
    stopped with a bare ``DataLossError: corrupted record at N``, naming no shard."""
    data = dataset_copy
    shard = Manifest.load(data).shard_files("train")[1]
    flip_byte(shard, 3)
    with pytest.raises(DamagedShardError) as failed:
        train(data, str(tmp_path / "model"), epochs=1)
    offset = re.search(r"record 3 fails its checksum \(its data starts at byte (\d+)\)",
                       str(failed.value))
    assert offset and f"{shard}: record 3 fails its checksum" in str(failed.value)
    assert f"corrupted record at {offset[1]}" in str(failed.value)  # TensorFlow's, mapped
    assert str(failed.value).startswith(f"1 shard(s) of {data} are damaged")


# A model whose loss is NaN exactly when a feature is below -1: the square root of a negative
# number is NaN on every CPU (IEEE 754), and a sum with NaN stays NaN, so the test does not
# depend on how a CPU rounds overflowing values (``inf`` inputs gave a finite loss on some).
DIVERGING_MODEL = """
import tensorflow as tf
import tf_keras

def build(schema, num_classes):
    x = tf_keras.Input((), name="x", dtype="float32")
    features = tf_keras.layers.Reshape((1,))(x)
    model = tf_keras.Model({"x": x}, tf_keras.layers.Dense(num_classes,
                                                            activation="softmax")(features))
    model.add_loss(1e-6 * tf.reduce_mean(tf.sqrt(x + 1.0)))
    return model
"""


def test_nan_loss_stops_with_epoch_and_step_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    (tmp_path / "diverging.py").write_text(DIVERGING_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [[i, float(i % 7), i % 2] for i in range(400)]
    good = write_csv(tmp_path / "good.csv", ["id", "x", "label"], rows)
    shard_tfrecords(good, str(tmp_path / "good"), label="label", keys=["id"])
    checkpoints = str(tmp_path / "ckpt")
    options = {"model_fn": "diverging:build", "checkpoint_dir": checkpoints}
    train(str(tmp_path / "good"), str(tmp_path / "model"), epochs=1, **options)
    for row in rows[::20]:
        row[1] = -5.0
    bad = write_csv(tmp_path / "bad.csv", ["id", "x", "label"], rows)
    shard_tfrecords(bad, str(tmp_path / "bad"), label="label", keys=["id"])
    # The folder's record would refuse other data (test_checkpoint_record.py); without one,
    # as an earlier tfkfp left it, the run resumes from a checkpoint that fits the model.
    os.remove(os.path.join(checkpoints, "tfkfp_checkpoint.json"))
    with pytest.raises(TrainingDiverged) as err:
        train(str(tmp_path / "bad"), str(tmp_path / "model2"), epochs=3, **options)
    assert re.search(r"became nan at epoch 2, step \d+", str(err.value))
    assert f"checkpoint is kept: {os.path.join(checkpoints, 'ckpt-1')}" in str(err.value)
    assert sorted(f for f in os.listdir(checkpoints) if f.endswith(".index")) == [
        "ckpt-1.index"]
    assert not os.path.exists(tmp_path / "model2")


def test_nan_stop_without_checkpoint_dir_names_no_checkpoint(tmp_path, monkeypatch):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    (tmp_path / "diverging.py").write_text(DIVERGING_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [[i, -5.0 if i % 3 == 0 else 1.0, i % 2] for i in range(60)]
    shard_tfrecords(write_csv(tmp_path / "bad.csv", ["id", "x", "label"], rows),
                    str(tmp_path / "bad"), label="label", keys=["id"])
    with pytest.raises(TrainingDiverged, match="No checkpoint was kept") as err:
        train(str(tmp_path / "bad"), str(tmp_path / "model"), epochs=2,
              model_fn="diverging:build")
    assert re.search(r"became nan at epoch 1, step 1\b", str(err.value))


def _earlier_model(demo_model, folder, labels=None, model=None):
    """A copy of a model with train's layout (weights, labels, metadata), edited."""
    import json

    shutil.copytree(demo_model, folder)
    if labels is not None:
        (folder / "assets" / "labels.txt").write_text("\n".join(labels) + "\n")
    if model is not None:
        meta = folder / savedmodel.METADATA_FILE
        body = json.loads(meta.read_text()) if meta.exists() else {}
        meta.write_text(json.dumps({**body, "model": model}))
    return str(folder)


def test_a_warm_start_that_cannot_continue_is_refused_before_training(demo_dataset,
                                                                      demo_model, tmp_path):
    def refused(warm_start, message):
        with pytest.raises(TrainConfigError, match=message):
            train(demo_dataset, str(tmp_path / "model"), warm_start=warm_start)
        assert not os.path.exists(tmp_path / "model")

    refused(str(tmp_path), r"there are no weights at .*weights/model\.index")
    refused(_earlier_model(demo_model, tmp_path / "cats", labels=["cat", "dog"]),
            r"its classes \['cat', 'dog'\] are not the dataset's \['0', '1', ")
    refused(_earlier_model(demo_model, tmp_path / "cnn", model="cnn"),
            "it is a 'cnn' model, not 'mlp'; set model_name")
    refused("minio://bucket/model", "warm_start 'minio://bucket/model': train reads")


def test_warm_start_comes_from_the_artifact_or_the_uri_not_both():
    assert warm_start_from("/m", "") == "/m" and warm_start_from("", "gs://b/m") == "gs://b/m"
    with pytest.raises(TrainConfigError, match=r"give warm_start_model \(/m\) or "
                                               r"warm_start_model_uri \(gs://b/m\), not both"):
        warm_start_from("/m", "gs://b/m")
