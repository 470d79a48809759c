"""The replicas' last log lines, which the local and Kubernetes launchers keep for a failure's
message."""

from typing import Iterable

TAIL_LINES = 40  # log lines of the replicas kept for a failure's message


def indented(lines: Iterable[str]) -> str:
    return "\n".join(f"  {line}" for line in lines)
