"""Where shards are kept: the data_root values and what each means per artifact store."""

import pytest

from tfkfp.components.common.data import data_root


def test_auto_keeps_shards_beside_an_artifact_on_a_store_the_step_can_write(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    gcs = "gs://bucket/root/run-1/shard-tfrecords/dataset"
    assert data_root.shard_dir("auto", gcs) == gcs + "-shards"
    minio = "minio://mlpipeline/v2/artifacts/training/run-1/shard-tfrecords/1/dataset"
    assert data_root.shard_dir("auto", minio) == ""  # no credentials: the launcher moves it
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    assert data_root.shard_dir("auto", minio) == minio + "-shards"
    assert data_root.shard_dir("auto", "/tmp/local/root/dataset") == ""  # the local runner


def test_inside_always_keeps_them_in_the_artifact():
    assert data_root.shard_dir("inside", "gs://bucket/root/dataset") == ""
    assert data_root.shard_dir("", "gs://bucket/root/dataset") == ""


def test_a_given_root_gets_one_folder_per_artifact():
    one = data_root.shard_dir("s3://data/tfkfp", "minio://mlpipeline/run-1/t/dataset")
    again = data_root.shard_dir("s3://data/tfkfp", "minio://mlpipeline/run-1/t/dataset")
    other = data_root.shard_dir("s3://data/tfkfp", "minio://mlpipeline/run-2/t/dataset")
    assert one == again != other  # a retried step rewrites its own folder, a new run not
    assert one.startswith("s3://data/tfkfp/") and other.startswith("s3://data/tfkfp/")


def test_a_root_no_step_can_write_is_refused_naming_what_works():
    with pytest.raises(data_root.DataRootError, match="hdfs://nn/data.*'auto' or 'inside'"):
        data_root.check("hdfs://nn/data")
