"""A shard damaged in place (its size unchanged) is named with its first broken record, and
the offset TensorFlow's "corrupted record at N" gives is that record's."""

import shutil

import pytest

from conftest import flip_byte, write_csv
from tfkfp.components.common.data.damage import (
    DamagedShardError,
    damaged_shards,
    shards_named_on_data_loss,
)
from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.shard_tfrecords.core import shard_tfrecords


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A Dataset of 300 rows, uncompressed and gzip-compressed: {compression: folder}."""
    root = tmp_path_factory.mktemp("damage")
    csv = write_csv(root / "t.csv", ["x", "label"], [[i * 0.5, i % 2] for i in range(300)])
    return {c: shard_tfrecords(csv, str(root / c), label="label", compression=c).dataset
            for c in ("none", "gzip")}


def copy(sharded, compression, tmp_path) -> str:
    return shutil.copytree(sharded[compression], str(tmp_path / compression))


def read_all(data: str) -> None:
    for _ in make_dataset(data, mode="eval", split="train", batch_size=16):
        pass


def test_the_damaged_shard_is_named_with_the_offset_tensorflow_gives(sharded, tmp_path):
    data = copy(sharded, "none", tmp_path)
    assert damaged_shards(data) == []
    shard = Manifest.load(data).shard_files("train")[0]
    flip_byte(shard, 7)
    with pytest.raises(DamagedShardError) as failed, shards_named_on_data_loss(data):
        read_all(data)
    message = str(failed.value)
    found = damaged_shards(data)
    assert len(found) == 1 and found[0].startswith(
        f"{shard}: record 7 fails its checksum (its data starts at byte ")
    offset = found[0].rsplit("at byte ", 1)[1].split(")")[0]
    assert f"(TensorFlow: corrupted record at {offset})" in message
    assert message.startswith(f"1 shard(s) of {data} are damaged") and found[0] in message


def test_a_damaged_gzip_shard_is_named(sharded, tmp_path):
    data = copy(sharded, "gzip", tmp_path)
    shard = Manifest.load(data).shard_files("eval")[1]
    raw = bytearray(open(shard, "rb").read())
    raw[len(raw) // 2] ^= 0xFF
    open(shard, "wb").write(bytes(raw))
    found = damaged_shards(data)
    assert len(found) == 1 and found[0].startswith(f"{shard}: ")


def test_tensorflows_error_goes_on_when_no_shard_is_damaged(sharded, tmp_path):
    import tensorflow as tf

    data = copy(sharded, "none", tmp_path)
    with pytest.raises(tf.errors.DataLossError, match="a checkpoint, not a shard"), \
            shards_named_on_data_loss(data):
        raise tf.errors.DataLossError(None, None, "a checkpoint, not a shard")
    pattern = f"{data}/train/*.tfrecord"  # not a Dataset directory: nothing to check against
    with pytest.raises(tf.errors.DataLossError), shards_named_on_data_loss(pattern):
        raise tf.errors.DataLossError(None, None, "corrupted record at 12")
