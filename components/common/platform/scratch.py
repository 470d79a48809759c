"""Scratch folders one run owns (the staging folder inside a Dataset being written, the spool
folder in the system temp directory), removed when the run ends and, after a kill, by the next
run.

A folder is named after its owner, ``<prefix><host>-<pid>.<start>-<token>`` (``start`` is the
process start time in clock ticks since boot on Linux, 0 elsewhere), and holds a ``heartbeat``
file rewritten every ``HEARTBEAT_SECONDS`` while the owner lives. The owner removes it when
its block ends, on an exception or on SIGTERM (see ``exit_on_sigterm``). Whatever a SIGKILL or
a lost machine leaves behind, ``remove_abandoned`` removes once the owner is known to be gone:

- on the same host (same name, same boot): its pid is not running, or now belongs to a process
  started at another time (the pid was reused);
- on another host (a retried pod writing to the same bucket): its heartbeat is older than
  ``STALE_SECONDS``.

A folder whose owner may still be alive (a concurrent writer here or elsewhere, or one without
a readable heartbeat on another host) is never touched.
"""

import contextlib
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
from typing import IO, Iterator, List

from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.progress import log

HEARTBEAT = "heartbeat"
HEARTBEAT_SECONDS = 60.0
STALE_SECONDS = 600.0  # ten missed heartbeats
PAUSE_ENV = "TFKFP_TEST_PAUSE_AT"  # tests only: stop at a named point until killed


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[:63] or "host"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux), or 0 when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _running(pid: int, start: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    now = _start_time(pid)
    return not (start and now and now != start)


def owner_name(prefix: str) -> str:
    """A new folder name for this process: ``<prefix><host>-<pid>.<start>-<token>``."""
    pid = os.getpid()
    return f"{prefix}{_host()}-{pid}.{_start_time(pid)}-{uuid.uuid4().hex[:8]}"


def open_private(path: str, mode: str = "wb") -> IO:
    """A new local file only its owner may read or write (0600, whatever the umask): scratch
    files hold the user's rows, and the temp directory is shared with every local user."""
    return open(path, mode, opener=lambda name, flags: os.open(name, flags, 0o600))


def make_private_dir(path: str) -> None:
    """Make the folder ``path``: 0700 where local (see open_private); a gs:// prefix has no
    modes to set."""
    if uris.is_remote(path):
        uris.makedirs(path)
        return
    os.makedirs(uris.local_path(path), mode=0o700)
    os.chmod(uris.local_path(path), 0o700)  # the umask may have taken bits off


def _beat(folder: str) -> None:
    pid = os.getpid()
    body = {"host": _host(), "boot_id": _boot_id(), "pid": pid, "start": _start_time(pid),
            "beat": time.time()}
    target = uris.join(folder, HEARTBEAT)
    if uris.is_remote(target):
        uris.write_text_atomic(target, json.dumps(body))
        return
    temp = uris.sibling_temp(target)
    with open_private(uris.local_path(temp)) as f:
        f.write(json.dumps(body).encode("utf-8"))
    os.replace(uris.local_path(temp), uris.local_path(target))


def _heartbeat(folder: str) -> dict:
    try:
        return json.loads(uris.read_text(uris.join(folder, HEARTBEAT)))
    except Exception:  # noqa: BLE001 - missing, half-copied or unreadable: unknown
        return {}


def abandoned(parent: str, name: str, prefix: str) -> str | None:
    """Why the scratch folder ``name`` in ``parent`` is abandoned, or None when its owner may
    still be alive (or the name is not one of ours)."""
    found = re.fullmatch(r"(.+)-(\d+)\.(\d+)-[0-9a-f]{8}", name[len(prefix):])
    if not name.startswith(prefix) or not found:
        return None
    host, pid, start = found.group(1), int(found.group(2)), int(found.group(3))
    beat = _heartbeat(uris.join(parent, name))
    same_boot = beat.get("boot_id", _boot_id()) == _boot_id()
    if host == _host() and same_boot:
        if _running(pid, start):
            return None
        return f"its process {pid} on this host has ended"
    age = time.time() - float(beat.get("beat", time.time()))
    if age > STALE_SECONDS:
        return f"its owner on {host} last showed life {age:.0f}s ago"
    return None


def remove_abandoned(parent: str, prefix: str) -> List[str]:
    """Remove the abandoned scratch folders named ``prefix*`` in ``parent``; their paths."""
    if not uris.isdir(parent):
        return []
    removed = []
    for name in uris.listdir(parent):
        reason = abandoned(parent, name, prefix) if name.startswith(prefix) else None
        if reason:
            path = uris.join(parent, name)
            log.info("removing %s, left by an earlier run: %s", path, reason)
            uris.rmtree(path)
            removed.append(path)
    return removed


@contextlib.contextmanager
def owned_dir(parent: str, prefix: str) -> Iterator[str]:
    """A scratch folder in parent, private to the user (0700 where local), kept alive by a
    heartbeat and removed whatever happens."""
    path = uris.join(parent, owner_name(prefix))
    make_private_dir(path)
    stop = threading.Event()
    beats = threading.Thread(target=_beat_until, args=(path, stop), daemon=True)
    try:
        _beat(path)
        beats.start()
        yield path
    finally:
        stop.set()
        if beats.is_alive():
            beats.join()
        uris.rmtree(path)


def _beat_until(path: str, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_SECONDS):
        try:
            _beat(path)
        except Exception as err:  # noqa: BLE001 - a missed beat is not worth failing for
            log.warning("could not refresh %s: %s", uris.join(path, HEARTBEAT), err)


@contextlib.contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM (a pod being stopped) raises SystemExit(143), so the
    block's cleanup runs. Only in the main thread, and only where no handler is set."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def pause_point(name: str) -> None:
    """Tests only: when ``TFKFP_TEST_PAUSE_AT`` names this point, say so on stderr and wait
    to be killed. Unset (always, outside tests), this does nothing."""
    if os.environ.get(PAUSE_ENV) != name:
        return
    print(f"tfkfp: paused at {name}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)
