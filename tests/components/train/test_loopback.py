"""The local cluster's TensorFlow servers listen on loopback only: TensorFlow binds them to
every interface, and train/loopback.py's shim moves that bind to 127.0.0.1."""

import os
import subprocess
import sys
import time

import pytest
from process_helpers import listening_sockets, pids_with_tf_config, start_training, tf_config_of

from tfkfp.components.train import loopback

BIND_WILDCARDS = """
import socket
for family, wildcard in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    s = socket.socket(family)
    s.bind((wildcard, 0))
    print(s.getsockname()[0])
"""


def test_the_shim_turns_a_wildcard_bind_into_loopback(tmp_path):
    library = loopback.build(str(tmp_path))
    assert library, "this machine has a C compiler, so the shim must build"
    env = {**os.environ, **loopback.environment(library)}
    out = subprocess.run([sys.executable, "-c", BIND_WILDCARDS], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["127.0.0.1", "::ffff:127.0.0.1"]


def test_without_the_shim_a_wildcard_bind_stays_a_wildcard():
    """What the shim is for: the kernel takes 0.0.0.0 and :: as every interface."""
    out = subprocess.run([sys.executable, "-c", BIND_WILDCARDS], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["0.0.0.0", "::"]


def test_a_prebuilt_library_that_is_not_there_is_refused(tmp_path, monkeypatch):
    missing = str(tmp_path / "nowhere.so")
    monkeypatch.setenv(loopback.LIBRARY_ENV, missing)
    with pytest.raises(FileNotFoundError, match=f"{loopback.LIBRARY_ENV}=.*nowhere.so"):
        loopback.build(str(tmp_path))


def test_a_preload_already_set_is_kept(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/opt/other.so")
    assert loopback.environment("/x/bind.so") == {"LD_PRELOAD": "/x/bind.so:/opt/other.so"}
    assert loopback.environment(None) == {}


@pytest.mark.slow
def test_a_running_multi_worker_cluster_listens_on_loopback_only(demo_dataset, tmp_path):
    run = start_training(demo_dataset, str(tmp_path / "model"),
                         strategy="multi_worker_mirrored", workers=2, epochs=200,
                         batch_size=16)
    try:
        listening = {}
        deadline = time.monotonic() + 300
        while len(listening) < 2:
            assert run.poll() is None, f"training ended early:\n{run.stderr.read()[-3000:]}"
            assert time.monotonic() < deadline, f"the workers never listened: {listening}"
            for index in (0, 1):
                for pid in pids_with_tf_config("worker", index):
                    port = int(tf_config_of(pid)["cluster"]["worker"][index].split(":")[1])
                    sockets = listening_sockets(pid)
                    if any(p == port for _, p in sockets):
                        listening[index] = (port, sockets)
            time.sleep(0.2)
    finally:
        run.kill()
        run.communicate()
    for index, (port, sockets) in listening.items():
        assert sockets, f"worker-{index} listens nowhere"
        for address, _ in sockets:
            assert address == "127.0.0.1", (
                f"worker-{index} (TF_CONFIG port {port}) listens on {sorted(sockets)}")
