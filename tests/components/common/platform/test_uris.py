"""common.platform.uris: names, atomic writes and folders replaced whole, on local paths and,
for files, on a remote filesystem (TensorFlow's in-memory ``ram://``, which goes through
tf.io.gfile as gs:// does; its folders are implicit, unlike an object store's, so folder
renames are tested locally)."""

import os
import uuid

import pytest

from tfkfp.components.common.platform import uris


@pytest.fixture(params=["local", "remote"])
def root(request, tmp_path):
    if request.param == "local":
        return str(tmp_path)
    base = f"ram://tfkfp-{uuid.uuid4().hex[:8]}"
    uris.makedirs(base)
    return base


def test_schemes_and_names():
    assert uris.is_remote("gs://b/x") and uris.is_remote("s3://b/x")
    assert not uris.is_remote("/data/x") and not uris.is_remote("file:///data/x")
    assert uris.local_path("file:///data/x") == "/data/x"
    assert uris.join("gs://b/", "a", "b.txt") == "gs://b/a/b.txt"
    assert uris.join("/data", "a", "b.txt") == os.path.join("/data", "a", "b.txt")
    assert uris.resolve("gs://b/root", "x.csv") == "gs://b/root/x.csv"
    assert uris.resolve("gs://b/root", "/abs/x.csv") == "/abs/x.csv"
    assert uris.resolve("/root", "gs://b/x.csv") == "gs://b/x.csv"


def test_kfp_paths_map_to_the_object_store_behind_them():
    assert uris.kfp_remote_uri("/gcs/bucket/run/model") == "gs://bucket/run/model"
    assert uris.kfp_remote_uri("gs://bucket/x") == "gs://bucket/x"
    assert uris.kfp_remote_uri("/tmp/x") is None


def test_an_atomic_write_leaves_only_the_file(root):
    target = uris.join(root, "a.json")
    uris.write_text_atomic(target, "one")
    uris.write_text_atomic(target, "two ✓")
    assert uris.read_text(target) == "two ✓"
    assert uris.listdir(root) == ["a.json"]


def test_glob_is_sorted_and_sizes_are_read(root):
    for name in ("b.txt", "a.txt", "c.csv"):
        with uris.open_file(uris.join(root, name), "wb") as f:
            f.write(b"12345")
    assert [os.path.basename(p) for p in uris.glob(uris.join(root, "*.txt"))] == \
        ["a.txt", "b.txt"]
    assert uris.size(uris.join(root, "c.csv")) == 5


def test_a_published_folder_replaces_the_old_one_whole(tmp_path):
    root = str(tmp_path)
    target = uris.join(root, "bundle")
    uris.publish_dir({"old.txt": b"old"}, target)
    uris.publish_dir({"model.bin": b"m", "labels.txt": b"a\n"}, target)
    assert sorted(uris.listdir(target)) == ["labels.txt", "model.bin"]
    assert sorted(uris.listdir(root)) == ["bundle"]  # no staging folder left beside it


def test_a_failed_replacement_keeps_the_old_folder_and_no_staging(tmp_path):
    root = str(tmp_path)
    target = uris.join(root, "model")
    uris.publish_dir({"v1": b"1"}, target)
    with pytest.raises(RuntimeError), uris.replaced_dir(target) as staging:
        with uris.open_file(uris.join(staging, "v2"), "wb") as f:
            f.write(b"2")
        raise RuntimeError("the writer failed")
    assert uris.listdir(target) == ["v1"]
    assert sorted(uris.listdir(root)) == ["model"]


def test_a_tree_is_copied_whole(tmp_path):
    root = str(tmp_path / "out")
    source = tmp_path / "source"
    (source / "train").mkdir(parents=True)
    (source / "train" / "data-0.tfrecord").write_bytes(b"records")
    (source / "schema.json").write_text("{}")
    target = uris.join(root, "copy")
    uris.copy_tree(str(source), target)
    assert sorted(uris.listdir(target)) == ["schema.json", "train"]
    with uris.open_file(uris.join(target, "train", "data-0.tfrecord")) as f:
        assert f.read() == b"records"


def test_a_local_link_shares_the_bytes_and_replaces_what_was_there(tmp_path):
    source, target = tmp_path / "a", tmp_path / "b"
    source.write_bytes(b"shard")
    target.write_bytes(b"stale")
    uris.link_or_copy(str(source), str(target))
    assert target.read_bytes() == b"shard"
    assert os.stat(source).st_ino == os.stat(target).st_ino
