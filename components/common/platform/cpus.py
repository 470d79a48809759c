"""How many CPUs this container may use, and thread pools sized to it.

A pod's CPU limit is a CFS quota in its cgroup; ``os.cpu_count()`` is the node's core count.
A step that starts one thread per node core under a 2-CPU limit is throttled, so every pool
(ours, TensorFlow's intra-op and inter-op, LiteRT's) follows :func:`container_cpus`. An
explicit setting always wins: a ``threads`` argument, or ``TF_NUM_INTRAOP_THREADS`` /
``TF_NUM_INTEROP_THREADS`` in the environment.
"""

import logging
import math
import os
from typing import Dict

CGROUP_ROOT = "/sys/fs/cgroup"
INTRA_OP_ENV, INTER_OP_ENV = "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"

log = logging.getLogger(__name__)


def container_cpus(root: str = CGROUP_ROOT) -> int:
    """CPUs this container may use: its cgroup CPU quota (v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``) rounded up, capped by the CPUs it may run
    on; without a quota, those CPUs (not the node's count when pinned)."""
    cores = _affinity()
    quota = _cgroup_quota(root)
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def threads_or_cpus(threads: int = 0) -> int:
    """``threads`` when the caller chose a number, else the container's CPUs."""
    return threads if threads > 0 else container_cpus()


def tensorflow_threads(threads: int = 0) -> int:
    """Size TensorFlow's intra-op and inter-op pools to ``threads`` or, by default, to the
    container's CPUs; call before TensorFlow runs its first op. ``TF_NUM_INTRAOP_THREADS`` and
    ``TF_NUM_INTEROP_THREADS`` set by the user win. Returns the intra-op size in effect.

    Once TensorFlow's runtime has started (a second step in one process, as in tests) its
    pools cannot change; they are kept and the call says so in the log."""
    import tensorflow as tf

    intra = _env_threads(INTRA_OP_ENV) or threads_or_cpus(threads)
    # At least 2: blocking ops (collectives, parameter-server RPCs) can deadlock with one.
    inter = _env_threads(INTER_OP_ENV) or max(2, threads_or_cpus(threads))
    try:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
    except RuntimeError:
        current = tf.config.threading.get_intra_op_parallelism_threads()
        log.debug("TensorFlow already started; its thread pools stay as they are (%s)",
                  current or "one per core")
        return current or intra
    return intra


def thread_environment(processes: int) -> Dict[str, str]:
    """Environment for ``processes`` TensorFlow processes sharing this container: each one's
    intra-op pool gets an equal share of its CPUs (at least one), unless the user set it."""
    share = str(max(1, container_cpus() // max(1, processes)))
    return {INTRA_OP_ENV: os.environ.get(INTRA_OP_ENV) or share}


def _env_threads(name: str) -> int:
    text = os.environ.get(name, "").strip()
    if text and not (text.isdigit() and int(text) > 0):
        raise ValueError(f"environment variable {name}={text!r}: expected a thread count of "
                         "1 or more (or unset for the container's CPUs)")
    return int(text or 0)


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _cgroup_quota(root: str) -> float | None:
    """The CPU quota in CPUs, or None when there is none (``max``, -1 or no cgroup file)."""
    v2 = _read(os.path.join(root, "cpu.max"))
    if v2:
        quota, _, period = v2.partition(" ")
        return int(quota) / int(period or 100000) if quota.isdigit() else None
    quota = _read(os.path.join(root, "cpu", "cpu.cfs_quota_us"))
    period = _read(os.path.join(root, "cpu", "cpu.cfs_period_us"))
    if quota and period and quota.lstrip("-").isdigit() and int(quota) > 0:
        return int(quota) / int(period)
    return None


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""
