"""Which processes descend from a process, and whether they have ended (Linux /proc)."""

import os
import time
from typing import Dict, Iterable, List, Tuple


def _stat(pid: int) -> Tuple[str, int, int] | None:
    """(state, parent pid, start time in clock ticks) of pid, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def descendants(pid: int) -> Dict[int, int]:
    """Every living process below pid: its pid -> its start time (to tell a reused pid)."""
    children: Dict[int, List[int]] = {}
    starts = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        found = _stat(int(name))
        if found and found[0] != "Z":
            children.setdefault(found[1], []).append(int(name))
            starts[int(name)] = found[2]
    below, todo = {}, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        below[child] = starts[child]
        todo.extend(children.get(child, []))
    return below


def alive(pid: int, start: int) -> bool:
    """Whether the process pid started at ``start`` still runs (a zombie has ended)."""
    found = _stat(pid)
    return found is not None and found[0] != "Z" and found[2] == start


def wait_until_gone(processes: Dict[int, int], within: float = 60.0) -> List[int]:
    """Wait until every process (pid -> start time) has ended, at most ``within`` seconds (a
    bound for a hung test, not a measure: they end in milliseconds); those still running."""
    deadline = time.monotonic() + within
    while True:
        left = [pid for pid, start in processes.items() if alive(pid, start)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def command_lines(pids: Iterable[int]) -> List[str]:
    """What each process runs, for a failure message."""
    shown = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                shown.append(f"{pid}: " + f.read().replace(b"\0", b" ").decode()[:200])
        except OSError:
            shown.append(f"{pid}: (gone)")
    return shown
