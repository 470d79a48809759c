"""A checkpoint_dir resumes only the run it records: same Dataset, schema and model settings."""

import json
import os
import shutil

import pytest

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.train import checkpoint_record, loop
from tfkfp.components.train.core import train
from tfkfp.components.train.errors import CheckpointMismatch

RECORD = checkpoint_record.RECORD_FILE
SMALL = {"hidden_units": "16", "steps_per_epoch": 3, "batch_size": 32}


@pytest.fixture(scope="module")
def other_digits(demo_dir, tmp_path_factory):
    """Other rows of the demo digits, sharded: a Dataset with the same schema, other data."""
    tmp = tmp_path_factory.mktemp("other_digits")
    with open(demo_dir.csv) as f:
        lines = f.readlines()
    (tmp / "half.csv").write_text("".join(lines[:900]))
    shard_tfrecords(str(tmp / "half.csv"), str(tmp / "dataset"), label="label", keys=["id"])
    return str(tmp / "dataset")


@pytest.fixture(scope="module")
def one_epoch(demo_dataset, tmp_path_factory):
    """A checkpoint_dir holding one epoch of the demo digits (tests copy it)."""
    folder = tmp_path_factory.mktemp("one_epoch") / "ckpt"
    train(demo_dataset, str(folder.parent / "model"), epochs=1, checkpoint_dir=str(folder),
          **SMALL)
    return folder


@pytest.fixture
def ckpt(one_epoch, tmp_path):
    return str(shutil.copytree(one_epoch, tmp_path / "ckpt"))


def test_the_same_data_with_more_epochs_resumes(demo_dataset, ckpt, tmp_path):
    record = json.load(open(os.path.join(ckpt, RECORD)))
    assert record["settings"]["hidden_units"] == [16] and record["settings"]["task"] == (
        "classification")
    # learning_rate and batch size are not recorded: changing them still resumes.
    result = train(demo_dataset, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt,
                   **{**SMALL, "batch_size": 16}, learning_rate=0.01)
    assert result.figures["initial_epoch"] == 1
    assert len(result.history["loss"]) == 2


def test_other_data_of_the_same_schema_is_refused_naming_the_folder(demo_dataset, other_digits,
                                                                    ckpt, tmp_path):
    assert checkpoint_record.model_schema(Schema.load(other_digits)) == \
        checkpoint_record.model_schema(Schema.load(demo_dataset))
    with pytest.raises(CheckpointMismatch) as err:
        train(other_digits, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt, **SMALL)
    message = str(err.value)
    assert f"checkpoint_dir {ckpt} keeps the checkpoints of another run" in message
    assert "the Dataset: recorded fingerprint" in message and demo_dataset in message
    assert other_digits in message
    assert "schema" not in message.split("Give")[0] and "setting" not in message
    assert "new checkpoint_dir, or empty" in message
    assert isinstance(err.value, TrainConfigError)
    assert not os.path.exists(tmp_path / "model")


def test_another_schema_is_refused_naming_the_folder_and_the_columns(regression_dataset, ckpt,
                                                                     tmp_path):
    with pytest.raises(CheckpointMismatch) as err:
        train(regression_dataset, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt,
              **SMALL)
    message = str(err.value)
    assert f"checkpoint_dir {ckpt}" in message and "incompatible tensor" not in message
    assert "features added: ['area', 'age', 'district', 'rooms']" in message
    assert "features removed: ['pixel_0'" in message and "and 59 more" in message
    assert "the schema's label" in message and "setting task: recorded 'classification', " \
        "this run 'regression'" in message


def test_other_model_settings_are_refused_saying_which(demo_dataset, ckpt, tmp_path):
    with pytest.raises(CheckpointMismatch) as err:
        train(demo_dataset, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt,
              **{**SMALL, "hidden_units": "32"}, optimizer="sgd")
    message = str(err.value)
    assert "setting hidden_units: recorded [16], this run [32]" in message
    assert "setting optimizer: recorded 'adam', this run 'sgd'" in message
    assert "Dataset" not in message


def test_a_folder_without_a_record_resumes_when_the_model_fits_and_records_it(
        demo_dataset, ckpt, tmp_path):
    os.remove(os.path.join(ckpt, RECORD))  # as an earlier tfkfp left it
    result = train(demo_dataset, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt,
                   **SMALL)
    assert result.figures["initial_epoch"] == 1
    config = TrainConfig(demo_dataset, "unused", epochs=2, checkpoint_dir=ckpt,
                         hidden_units=(16,))
    assert checkpoint_record.load(ckpt) == checkpoint_record.expected(config)


def test_a_folder_without_a_record_that_does_not_fit_names_the_folder(demo_dataset, ckpt,
                                                                      tmp_path):
    os.remove(os.path.join(ckpt, RECORD))
    with pytest.raises(CheckpointMismatch) as err:
        train(demo_dataset, str(tmp_path / "model"), epochs=2, checkpoint_dir=ckpt,
              **{**SMALL, "hidden_units": "32"})
    message = str(err.value)
    assert f"checkpoint_dir {ckpt}: its newest checkpoint {ckpt}/ckpt-1 cannot be " \
        "restored into this model (ValueError: Received incompatible tensor" in message
    assert not os.path.exists(os.path.join(ckpt, RECORD))  # nothing adopted that failed


def test_a_record_without_checkpoints_binds_nothing(demo_dataset, other_digits, tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    other = TrainConfig(other_digits, "unused", checkpoint_dir=str(folder))
    (folder / RECORD).write_text(json.dumps(checkpoint_record.expected(other)))
    config = TrainConfig(demo_dataset, "unused", checkpoint_dir=str(folder))
    assert checkpoint_record.check(config) == checkpoint_record.expected(config)


def test_the_fingerprint_follows_the_shards_not_the_path(demo_dataset, other_digits,
                                                         tmp_path):
    copy = shutil.copytree(demo_dataset, tmp_path / "copy")
    fingerprint = checkpoint_record.fingerprint
    assert fingerprint(Manifest.load(str(copy))) == fingerprint(Manifest.load(demo_dataset))
    assert fingerprint(Manifest.load(other_digits)) != fingerprint(Manifest.load(demo_dataset))


def test_only_the_chief_writes_the_record(demo_dataset, tmp_path):
    import tf_keras

    config = TrainConfig(demo_dataset, "unused", checkpoint_dir=str(tmp_path / "ckpt"))
    model = tf_keras.Sequential([tf_keras.Input((2,)), tf_keras.layers.Dense(1)])
    model.compile("adam", "mse")
    for chief in (False, True):
        loop._checkpoints(model, config, config.checkpoint_dir, chief, str(tmp_path / "s"))
        assert os.path.exists(tmp_path / "ckpt" / RECORD) == chief
