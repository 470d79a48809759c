"""Progress for long work: records done, rate and ETA, at a steady cadence.

On a terminal the line is redrawn in place; elsewhere (a pod's log, the KFP UI) one log
line is written every ``every_s`` seconds, so logs stay readable and bounded.
"""

import logging
import sys
import time
from typing import TextIO

log = logging.getLogger("tfkfp")


def human(count: float) -> str:
    """3 significant figures at most: 980, 1.2k, 25.3k, 1.4M (pipelines.figures reads it back)."""
    for unit in ("", "k", "M", "G"):
        if abs(count) < 1000:
            return f"{count:.0f}{unit}" if unit == "" else f"{count:.1f}{unit}"
        count /= 1000
    return f"{count:.1f}T"


class Progress:
    def __init__(self, what: str, total: float | None = None, unit: str = "records",
                 every_s: float = 5.0, stream: TextIO | None = None):
        self.what, self.total, self.unit, self.every_s = what, total, unit, every_s
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0.0
        self.start = self._last = time.monotonic()

    def update(self, amount: float) -> None:
        self.done += amount
        now = time.monotonic()
        if now - self._last >= (0.2 if self.tty else self.every_s):
            self._last = now
            self._emit(now)

    def line(self, now: float | None = None) -> str:
        elapsed = max((now or time.monotonic()) - self.start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.what}: {human(self.done)} {self.unit}, {human(rate)} {self.unit}/s"
        if self.total:
            fraction = min(self.done / self.total, 1.0)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            text += f", {fraction:.0%}, ETA {eta:.0f}s" if eta != float("inf") else ""
        return text

    def _emit(self, now: float) -> None:
        if self.tty:
            self.stream.write("\r" + self.line(now).ljust(78))
            self.stream.flush()
        else:
            log.info(self.line(now))

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line().ljust(78) + "\n")
            self.stream.flush()
        else:
            log.info(self.line())
