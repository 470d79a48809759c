"""A `tfkfp shard` killed at any point: the output is the old complete Dataset or the new
one, never a mix or nothing, and the next run removes what the killed one left (its
staging folder in the output, its spool folder in the temp directory, shards it moved in).

The command runs in a child process that the test hook ``TFKFP_TEST_PAUSE_AT`` stops at a
named point (it prints ``tfkfp: paused at <point>`` and waits); the test then kills it."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest

from conftest import write_csv
from tfkfp.components.common.data.dataset import DatasetMismatchError, Manifest
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.publish import SPOOL_PREFIX, STAGING_PREFIX

BEFORE_COMMIT = ["encoding", "writing", "publishing", "committing"]


def table(path, ids, labels=("cat", "dog")):
    return write_csv(path, ["id", "x", "animal"],
                     [[i, i * 0.5, labels[i % len(labels)]] for i in ids])


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """An old Dataset (ids 0..599, 3 shards) and a new input (ids 1000..1899) for it; the
    temp directory (where spools go) is tmp_path/tmp, here and in the child."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    out = str(tmp_path / "ds")
    shard_tfrecords(table(tmp_path / "old.csv", range(600)), out, label="animal", keys=["id"],
                    num_shards=3)
    return out, table(tmp_path / "new.csv", range(1000, 1900)), temp


def run_until(point, source, out, temp, sig=signal.SIGKILL, extra=()):
    """`tfkfp shard` in a child process, stopped at ``point`` and sent ``sig``."""
    env = {**os.environ, "TFKFP_TEST_PAUSE_AT": point, "TMPDIR": str(temp)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tfkfp.cli.main", "shard", source, out, "--label",
         "animal", "--keys", "id", "--num-shards", "2", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(180, child.kill)
    watchdog.start()
    try:
        seen = []
        for line in child.stderr:
            seen.append(line)
            if line.strip() == f"tfkfp: paused at {point}":
                child.send_signal(sig)
                break
        else:
            raise AssertionError(f"never paused at {point}:\n{''.join(seen)[-3000:]}")
        child.stderr.read()
        return child.wait()
    finally:
        watchdog.cancel()


def ids_of(out):
    found = [keys["id"].numpy() for split in ("train", "eval")
             for _, keys in make_dataset(out, mode="predict", split=split, batch_size=128)]
    return sorted(np.concatenate(found).tolist())


def leftovers(out, temp):
    return ([n for n in os.listdir(out) if n.startswith(STAGING_PREFIX)],
            [n for n in os.listdir(temp) if n.startswith(SPOOL_PREFIX)])


def unlisted_shards(out):
    listed = Manifest.load(out).listed()
    return [f"{s}/{n}" for s in ("train", "eval") for n in os.listdir(os.path.join(out, s))
            if f"{s}/{n}" not in listed]


@pytest.mark.parametrize("point", BEFORE_COMMIT + ["cleaning"])
def test_a_killed_run_leaves_one_whole_dataset_and_the_next_run_cleans_up(setup, point):
    out, source, temp = setup
    assert run_until(point, source, out, temp) == -signal.SIGKILL
    committed = point == "cleaning"
    expected = list(range(1000, 1900)) if committed else list(range(600))
    assert ids_of(out) == expected  # whole, and checked against its manifest
    assert Manifest.load(out).generation == (1 if committed else 0)
    staging, spool = leftovers(out, temp)
    assert len(staging) == 1 and len(spool) == 1, (staging, spool)
    assert bool(unlisted_shards(out)) == (point in ("publishing", "committing", "cleaning"))

    result = shard_tfrecords(source, out, label="animal", keys=["id"], num_shards=2)
    assert result.total_records == 900 and ids_of(out) == list(range(1000, 1900))
    assert leftovers(out, temp) == ([], [])
    assert unlisted_shards(out) == []
    assert sorted(os.listdir(out)) == ["eval", "manifest.json", "schema.json", "train"]


def test_sigterm_removes_the_staging_and_spool_folders_on_the_way_out(setup):
    out, source, temp = setup
    before = json.load(open(os.path.join(out, "manifest.json")))
    assert run_until("writing", source, out, temp, sig=signal.SIGTERM) == 128 + signal.SIGTERM
    assert leftovers(out, temp) == ([], [])
    assert json.load(open(os.path.join(out, "manifest.json"))) == before
    assert ids_of(out) == list(range(600)) and unlisted_shards(out) == []


def test_a_kill_between_a_changed_schema_and_its_manifest_is_refused_not_mixed(setup, tmp_path):
    out, _, temp = setup
    source = table(tmp_path / "emu.csv", range(1000, 1900), labels=("cat", "dog", "emu"))
    assert run_until("committing", source, out, temp) == -signal.SIGKILL
    with pytest.raises(DatasetMismatchError, match=r"schema.json does not match .*manifest.json"):
        make_dataset(out, mode="predict")
    shard_tfrecords(source, out, label="animal", keys=["id"], num_shards=2)
    assert ids_of(out) == list(range(1000, 1900)) and leftovers(out, temp) == ([], [])


@pytest.mark.parametrize("point", ["writing", "publishing", "committing"])
def test_shards_on_an_object_store_survive_a_kill_the_same_way(point, setup, s3):
    """Shards written straight to their final names on an S3-compatible store (no rename
    there): a killed run leaves the old Dataset whole and readable; the next run's commit
    removes the shards the killed one wrote."""
    from tfkfp.components.common.platform import uris

    out, new, temp = setup
    shards = uris.join(s3, "shards")
    old = table(os.path.join(os.path.dirname(out), "old2.csv"), range(600))
    shard_tfrecords(old, out, label="animal", keys=["id"], num_shards=3, shard_dir=shards)
    before = Manifest.load(out).listed()
    assert run_until(point, new, out, temp, extra=["--shard-dir", shards]) != 0
    assert Manifest.load(out).listed() == before and ids_of(out) == list(range(600))
    shard_tfrecords(new, out, label="animal", keys=["id"], num_shards=2, shard_dir=shards)
    listed = Manifest.load(out).listed()
    on_store = {f"{shards}/{split}/{n}" for split in ("train", "eval")
                for n in uris.listdir(uris.join(shards, split))}
    assert on_store == listed  # nothing the killed run wrote is left
    assert ids_of(out) == list(range(1000, 1900))
