"""uris on a real S3-compatible server (SeaweedFS on loopback): every operation the suite
uses, through s3:// and minio://, with credentials and endpoint from the environment."""

import pytest

from tfkfp.components.common.platform import object_store, uris


def test_files_write_read_list_and_remove(s3):
    uris.write_text_atomic(uris.join(s3, "a", "one.txt"), "één\n")
    with uris.open_file(uris.join(s3, "a", "two.bin"), "wb") as f:
        f.write(b"\x00" * 1000)
    assert uris.read_text(uris.join(s3, "a", "one.txt")) == "één\n"
    assert uris.exists(uris.join(s3, "a", "one.txt")) and uris.isdir(uris.join(s3, "a"))
    assert not uris.exists(uris.join(s3, "a", "three.txt"))
    assert not uris.isdir(uris.join(s3, "a", "one.txt"))
    assert uris.listdir(s3) == ["a"]
    assert uris.listdir(uris.join(s3, "a")) == ["one.txt", "two.bin"]
    assert uris.size(uris.join(s3, "a", "two.bin")) == 1000
    assert uris.mtime(uris.join(s3, "a", "two.bin")) > 0
    uris.remove(uris.join(s3, "a", "one.txt"))
    assert uris.listdir(uris.join(s3, "a")) == ["two.bin"]
    uris.rmtree(s3)
    assert not uris.exists(uris.join(s3, "a", "two.bin"))


def test_glob_matches_one_level_and_nested_patterns(s3):
    for name in ["train/data-0.tfrecord", "train/data-1.tfrecord", "eval/data-0.tfrecord",
                 "train/deeper/data-9.tfrecord", "notes.txt"]:
        uris.write_text_atomic(uris.join(s3, name), "x")
    assert uris.glob(uris.join(s3, "train", "data-*.tfrecord")) == [
        f"{s3}/train/data-0.tfrecord", f"{s3}/train/data-1.tfrecord"]
    assert uris.glob(uris.join(s3, "*", "data-0.tfrecord")) == [
        f"{s3}/eval/data-0.tfrecord", f"{s3}/train/data-0.tfrecord"]
    assert uris.glob(uris.join(s3, "*.txt")) == [f"{s3}/notes.txt"]
    assert uris.glob(uris.join(s3, "nothing-*")) == []


def test_random_access_reads_byte_ranges(s3):
    with uris.open_file(uris.join(s3, "table.csv"), "wb") as f:
        f.write(b"".join(b"%08d\n" % i for i in range(10000)))
    with uris.open_file(uris.join(s3, "table.csv")) as f:
        f.seek(9 * 5000)
        assert f.read(9) == b"00005000\n"


def test_folders_are_replaced_whole_and_copied_both_ways(s3, tmp_path):
    local = tmp_path / "model"
    (local / "variables").mkdir(parents=True)
    (local / "saved_model.pb").write_bytes(b"pb")
    (local / "variables" / "variables.index").write_bytes(b"index")
    uris.copy_tree(str(local), uris.join(s3, "model"))
    assert uris.listdir(uris.join(s3, "model")) == ["saved_model.pb", "variables"]
    assert not [n for n in uris.listdir(s3) if n.startswith(".")]  # no staging left
    uris.copy_tree(uris.join(s3, "model"), str(tmp_path / "back"))
    assert (tmp_path / "back" / "variables" / "variables.index").read_bytes() == b"index"
    uris.publish_dir({"only.txt": b"new"}, uris.join(s3, "model"))
    assert uris.listdir(uris.join(s3, "model")) == ["only.txt"]


def test_minio_uris_reach_the_same_store(s3):
    """minio:// (KFP's on-prem artifact scheme) takes the same endpoint and keys."""
    uris.write_text_atomic(uris.join(s3, "k.txt"), "same")
    assert uris.read_text("minio://" + s3[len("s3://"):] + "/k.txt") == "same"


def test_minio_without_an_endpoint_means_kfps_in_cluster_store(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    assert object_store.endpoint("minio") == object_store.KFP_MINIO_ENDPOINT
    assert object_store.endpoint("s3") is None
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "https://store.example:9000")
    assert object_store.endpoint("s3") == "https://store.example:9000"


@pytest.mark.parametrize("uri", ["s3://", "s3:///key", "minio://"])
def test_a_uri_without_a_bucket_is_refused_naming_it(uri):
    with pytest.raises(object_store.ObjectStoreError, match="BUCKET"):
        object_store.split(uri)


def test_wrong_keys_fail_with_the_stores_answer(s3, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(OSError):
        uris.write_text_atomic(uris.join(s3, "x.txt"), "x")


def test_a_folder_or_file_downloads_into_folders_not_there_yet(s3, tmp_path):
    uris.write_text_atomic(uris.join(s3, "d", "sub", "f.txt"), "x")
    object_store.copy(uris.join(s3, "d"), str(tmp_path / "a" / "b"))
    assert (tmp_path / "a" / "b" / "sub" / "f.txt").read_text() == "x"
    object_store.copy(uris.join(s3, "d", "sub", "f.txt"), str(tmp_path / "c" / "f.txt"))
    assert (tmp_path / "c" / "f.txt").read_text() == "x"
