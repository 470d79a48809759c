"""Scratch folders: removed when their block ends, and after a kill only once their owner is
known to be gone (a concurrent writer's folder, here or on another host, is kept)."""

import json
import os
import subprocess
import sys
import time

import pytest

from tfkfp.components.common.platform import scratch

PREFIX = ".tfkfp-staging-"


def folder(parent, host=None, pid=None, start=None, beat=None, boot_id=None):
    """A scratch folder as another run would have left it."""
    pid = os.getpid() if pid is None else pid
    start = scratch._start_time(pid) if start is None else start
    name = f"{PREFIX}{host or scratch._host()}-{pid}.{start}-0123abcd"
    path = parent / name
    path.mkdir()
    if beat is not None:
        body = {"beat": beat, "boot_id": scratch._boot_id() if boot_id is None else boot_id}
        (path / scratch.HEARTBEAT).write_text(json.dumps(body))
    return name


def ended_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_folders_whose_owner_is_gone_are_removed(tmp_path):
    now = time.time()
    gone = {
        folder(tmp_path, pid=ended_pid()),  # killed on this host
        folder(tmp_path, start=1),  # its pid now belongs to another process
        folder(tmp_path, host="pod-a", pid=7, beat=now - scratch.STALE_SECONDS - 60),
    }
    alive = {
        folder(tmp_path),  # this very process
        folder(tmp_path, host="pod-b", pid=7, beat=now - 30),  # another host, beating
        folder(tmp_path, host="pod-c", pid=7),  # another host, no heartbeat: unknown
        folder(tmp_path, pid=ended_pid(), beat=now - 5, boot_id="another boot"),
        PREFIX + "0123456789ab",  # not one of ours to judge
    }
    (tmp_path / (PREFIX + "0123456789ab")).mkdir()
    removed = scratch.remove_abandoned(str(tmp_path), PREFIX)
    assert {os.path.basename(p) for p in removed} == gone
    assert set(os.listdir(tmp_path)) == alive


def test_an_owned_folder_beats_and_goes_away_whatever_happens(tmp_path):
    with pytest.raises(RuntimeError), scratch.owned_dir(str(tmp_path), PREFIX) as path:
        beat = json.loads(open(os.path.join(path, scratch.HEARTBEAT)).read())
        assert beat["pid"] == os.getpid() and abs(beat["beat"] - time.time()) < 60
        assert scratch.abandoned(str(tmp_path), os.path.basename(path), PREFIX) is None
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def pause_in_a_child(point: str, variable: str | None):
    """A child process that reaches pause_point(point) with TFKFP_TEST_PAUSE_AT=variable;
    its stderr says whether it paused, and it is killed either way."""
    env = {k: v for k, v in os.environ.items() if k != scratch.PAUSE_ENV}
    if variable is not None:
        env[scratch.PAUSE_ENV] = variable
    code = ("import sys; from tfkfp.components.common.platform import scratch; "
            f"scratch.pause_point({point!r}); print('passed', file=sys.stderr, flush=True)")
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE,
                             text=True)
    try:
        return child.stderr.readline().strip()  # the first line: paused, or passed it
    finally:
        child.kill()
        child.wait()


def test_the_pause_hook_is_inert_unless_its_variable_names_the_point():
    assert pause_in_a_child("writing", None) == "passed"
    assert pause_in_a_child("writing", "publishing") == "passed"  # another point
    assert pause_in_a_child("writing", "writing") == "tfkfp: paused at writing"
