"""Child processes that die with the process that started them.

A process killed with SIGKILL runs no exit code, so it cannot stop what it started: its
children are reparented (to PID 1 or a subreaper) and run on to the end. On Linux a child can
ask the kernel for a signal when its parent dies (``prctl(PR_SET_PDEATHSIG)``);
``die_with_parent`` returns a ``preexec_fn`` that asks for it between fork and exec (the
request survives the exec). The kernel's rule has three edges, handled here or by the caller:

- the signal comes when the *thread* that forked the child ends, not the whole process: start
  the child from a thread that waits for it (as ``subprocess.run`` and kfp's task runner do);
- the parent may die between fork and the request: the child then finds that its parent is no
  longer the process that started it, and exits at once;
- the request is not inherited by the child's own children: a shell must ``exec`` its last
  command, and a process that starts workers asks again for each of them.

Elsewhere than Linux ``die_with_parent`` returns None (no ``preexec_fn``): children may
outlive a killed parent there.
"""

import ctypes
import functools
import os
import signal
import subprocess
import sys
from typing import Any, Callable

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


@functools.lru_cache(maxsize=1)
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, or None off Linux. Looked up in the parent: loading a library in the
    forked child of a threaded process can deadlock on a lock another thread held."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when the calling
    thread (see the module docstring) or its process dies, however it dies.

    Args:
        sig: The signal the child gets. SIGKILL cannot be caught; SIGTERM lets the child
            clean up first (its handlers run), as a cancelled pod does.

    Returns:
        The function to pass as ``preexec_fn``, or None where the kernel cannot do this.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent, number = os.getpid(), int(sig)

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request: it will never fire
            os._exit(128 + number)

    return in_child


def popen(args: Any, sig: int = signal.SIGKILL, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, **kwargs)`` for a child that dies with this process.

    Args:
        args: The command, as for ``subprocess.Popen``.
        sig: The signal the child gets when this thread or process dies.
        **kwargs: Passed on to ``subprocess.Popen`` (not ``preexec_fn``).

    Returns:
        The started process.
    """
    return subprocess.Popen(args, preexec_fn=die_with_parent(sig), **kwargs)
