"""Thread pools follow the container's CPU limit (its cgroup quota), not the node's cores, and
an explicit setting wins."""

import os
import pathlib
import subprocess
import sys

import pytest

from tfkfp.components.common.platform import cpus

ROOT = pathlib.Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("files,expected", [
    ({"cpu.max": "150000 100000"}, 2),
    ({"cpu.max": "50000 100000"}, 1),
    ({"cpu/cpu.cfs_quota_us": "100000", "cpu/cpu.cfs_period_us": "100000"}, 1),
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, 8),
])
def test_container_cpus_follow_the_cgroup_quota(tmp_path, monkeypatch, files, expected):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)))
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    assert cpus.container_cpus(str(tmp_path)) == expected


def test_container_cpus_without_a_quota_are_the_cpus_it_may_run_on(tmp_path, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2})
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.container_cpus(str(tmp_path)) == 3
    assert cpus.container_cpus(str(tmp_path / "none")) == 3


def test_an_explicit_thread_count_wins(monkeypatch):
    monkeypatch.setattr(cpus, "container_cpus", lambda root=cpus.CGROUP_ROOT: 3)
    assert cpus.threads_or_cpus(0) == 3
    assert cpus.threads_or_cpus(5) == 5


def test_local_processes_share_the_container(monkeypatch):
    monkeypatch.setattr(cpus, "container_cpus", lambda root=cpus.CGROUP_ROOT: 4)
    monkeypatch.delenv(cpus.INTRA_OP_ENV, raising=False)
    assert cpus.thread_environment(3) == {cpus.INTRA_OP_ENV: "1"}
    assert cpus.thread_environment(2) == {cpus.INTRA_OP_ENV: "2"}
    monkeypatch.setenv(cpus.INTRA_OP_ENV, "6")
    assert cpus.thread_environment(2) == {cpus.INTRA_OP_ENV: "6"}


# A fresh interpreter: TensorFlow's pools can only be sized before its runtime starts.
PROBE = """
import os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # a one-CPU container
from tfkfp.components.common.platform.cpus import tensorflow_threads
import tensorflow as tf
print(tensorflow_threads(int(sys.argv[1])), tf.config.threading.get_intra_op_parallelism_threads(),
      tf.config.threading.get_inter_op_parallelism_threads())
"""


@pytest.mark.parametrize("threads,env,expected", [
    (0, {}, "1 1 2"),  # the container's one CPU; inter-op never below 2
    (3, {}, "3 3 3"),  # the step's explicit setting
    (0, {"TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "5"}, "4 4 5"),
])
def test_tensorflow_pools_follow_the_container(threads, env, expected):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")}
    result = subprocess.run([sys.executable, "-c", PROBE, str(threads)], capture_output=True,
                            text=True, env={**clean, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-3:] == expected.split()


def test_a_bad_thread_variable_is_named(monkeypatch):
    monkeypatch.setenv(cpus.INTRA_OP_ENV, "many")
    with pytest.raises(ValueError, match="TF_NUM_INTRAOP_THREADS='many'"):
        cpus.tensorflow_threads()


def test_only_common_cpus_counts_cores():
    """One owner: every pool asks common/platform/cpus.py, never the node's core count."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "components").rglob("*.py")
                 if p.name != "cpus.py"
                 and any(w in p.read_text() for w in ("os.cpu_count(", "sched_getaffinity("))]
    assert not offenders, (f"count CPUs with common.platform.cpus.container_cpus instead: "
                           f"{offenders}")
