"""Where shards are kept: the data_root values and what each means per artifact store."""

import os
import re

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


def test_a_relative_root_is_resolved_once_against_the_working_folder(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = data_root.shard_dir("shards", "/pipeline-root/run-1/t/dataset")
    assert folder.startswith(str(work / "shards") + "/")  # absolute: any reader finds it
    assert data_root.shard_dir("./shards/../shards", "/pipeline-root/run-1/t/dataset") == folder


@pytest.mark.parametrize("value", ["../..", "..", "shards/../../elsewhere"])
def test_a_relative_root_that_leaves_the_working_folder_is_refused_naming_where(
        value, tmp_path, monkeypatch):
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    would = os.path.normpath(os.path.join(work, value))
    expected = (f"data_root {value!r} leaves {work}, the folder relative paths are taken "
                f"from: it would go to {would};")
    for call in (lambda: data_root.check(value),
                 lambda: data_root.shard_dir(value, "/root/run-1/t/dataset")):
        with pytest.raises(data_root.DataRootError, match=re.escape(expected)):
            call()
    assert sorted(os.listdir(tmp_path)) == ["a"]  # nothing written


def test_the_pipelines_refuse_a_root_that_leaves_the_working_folder_before_a_run(
        tmp_path, monkeypatch):
    from tfkfp.pipelines import registry

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text("x,label\n1,0\n")
    with pytest.raises(ValueError, match=r"data_root '\.\./\.\.' leaves .*step shard_tfrecords"):
        registry.parse_parameters("training", ["input_uri=in.csv", "label=label",
                                               "data_root=../.."], runs_on="local")


def test_a_uri_root_with_a_parent_segment_is_refused():
    with pytest.raises(data_root.DataRootError, match=r"data_root 's3://b/x/\.\./y' has a "
                       r"'\.\.' segment"):
        data_root.check("s3://b/x/../y")
    assert data_root.shard_dir("/abs/../shards", "s3://b/a").startswith("/shards/")
