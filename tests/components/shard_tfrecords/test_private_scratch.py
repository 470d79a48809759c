"""Sharding's scratch is private to the user whatever the umask: the spool folder in the shared
temp directory holds the user's rows, so it is 0700 and its files 0600; so is the staging
folder in the output and its heartbeat."""

import os
import stat
import tempfile

import pytest

from conftest import write_csv
from tfkfp.components.shard_tfrecords import writer
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.publish import SPOOL_PREFIX


@pytest.fixture
def umask_022():
    saved = os.umask(0o022)  # the usual default, which makes files readable by everyone
    yield
    os.umask(saved)


def modes(folder):
    """The permission bits of folder and of everything in it, by path relative to its parent."""
    parent = os.path.dirname(folder)
    found = {os.path.relpath(folder, parent): stat.S_IMODE(os.stat(folder).st_mode)}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            found[os.path.relpath(path, parent)] = stat.S_IMODE(os.stat(path).st_mode)
    return found


def test_spool_and_staging_are_private_whatever_the_umask(tmp_path, monkeypatch, umask_022):
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen = {}
    original = writer.write_shards

    def looking(results, spool_dir, out_dir, *args, **kwargs):  # while both are full
        seen.update(spool=modes(spool_dir), staging=modes(out_dir))
        return original(results, spool_dir, out_dir, *args, **kwargs)

    monkeypatch.setattr(writer, "write_shards", looking)
    source = write_csv(tmp_path / "in.csv", ["id", "x", "animal"],
                       [[i, i * 0.5, ("cat", "dog")[i % 2]] for i in range(300)])
    shard_tfrecords(source, str(tmp_path / "ds"), label="animal", keys=["id"], num_shards=2)

    spool = seen["spool"]
    folder = next(path for path in spool if os.sep not in path)
    assert folder.startswith(SPOOL_PREFIX) and spool.pop(folder) == 0o700
    assert any(os.path.basename(path).startswith("chunk-") for path in spool), spool
    assert set(spool.values()) == {0o600}, spool
    assert set(seen["staging"].values()) == {0o700, 0o600}, seen["staging"]
    assert os.listdir(temp) == []  # and removed at the end
