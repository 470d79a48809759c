"""Progress for long work, one line format every step reports through.

A step reports with ``Progress`` (records, messages: counted as they go, a line at a steady
cadence) or ``report`` (epochs, trials: a line per event). The line reads

    what: 12.3k/50.0k records, 2.1k records/s, 25%, ETA 18s; loss 0.279, val_accuracy 0.958

(the total, percentage, ETA and figures when known) and ``parse`` reads it back: ``tfkfp run``
shows it on the console while the task runs. On a terminal ``Progress`` redraws its line in
place; elsewhere (a pod's log, the KFP UI) it logs one line every ``every_s`` seconds, so logs
stay readable and bounded.
"""

import dataclasses
import logging
import re
import sys
import time
from typing import Mapping, TextIO

log = logging.getLogger("tfkfp")


def human(count: float) -> str:
    """3 significant figures at most: 980, 1.2k, 25.3k, 1.4M (pipelines.figures reads it back)."""
    for unit in ("", "k", "M", "G"):
        if abs(count) < 1000:
            return f"{count:.0f}{unit}" if unit == "" else f"{count:.1f}{unit}"
        count /= 1000
    return f"{count:.1f}T"


def _rate(rate: float) -> str:
    """A rate below 10 keeps two figures (0.42 epochs/s), where ``human`` would say 0."""
    return human(rate) if rate >= 9.95 else f"{rate:.2g}"


def line(what: str, done: float, unit: str = "records", seconds: float = 0.0,
         total: float | None = None, figures: Mapping[str, str] | None = None,
         counted_from: float = 0.0) -> str:
    """The progress line of ``done`` of ``total`` ``unit`` after ``seconds``; the rate and ETA
    count from ``counted_from`` (what a resumed run had already done)."""
    rate = max(done - counted_from, 0.0) / max(seconds, 1e-9)
    count = f"{human(done)}/{human(total)}" if total else human(done)
    text = f"{what}: {count} {unit}, {_rate(rate)} {unit}/s"
    if total:
        text += f", {min(done / total, 1.0):.0%}"
        text += f", ETA {(total - done) / rate:.0f}s" if rate > 0 and done < total else ""
    if figures:
        text += "; " + ", ".join(f"{name} {value}" for name, value in figures.items())
    return text


def report(what: str, done: float, unit: str, seconds: float, total: float | None = None,
           figures: Mapping[str, str] | None = None, counted_from: float = 0.0) -> None:
    """Log one progress line now (an epoch or a trial ended)."""
    log.info(line(what, done, unit, seconds, total, figures, counted_from))


_NUMBER = r"\d+(?:\.\d+)?(?:e[-+]?\d+)?[kMGT]?"
_LINE = re.compile(
    rf"(?P<what>[A-Za-z][\w .-]*?): (?P<done>{_NUMBER})(?:/(?P<total>{_NUMBER}))? "
    rf"(?P<unit>[a-z]+), (?P<rate>{_NUMBER}) (?P=unit)/s(?:, (?P<percent>\d+)%)?"
    r"(?:, ETA (?P<eta>\d+)s)?(?:; (?P<figures>.*?))?\s*$")


@dataclasses.dataclass(frozen=True)
class Event:
    """A progress line read back; counts as the line shows them (``12.3k``)."""
    what: str
    done: str
    total: str
    unit: str
    rate: str
    percent: int | None
    eta_s: int | None
    figures: str

    @property
    def text(self) -> str:
        """The event as its line said it, without the logger's prefix."""
        return f"{self.what}: {self.figures_text(brief=False)}"

    def figures_text(self, brief: bool = True) -> str:
        """The line after ``what:``; ``brief``, for a line beside a bar, leaves out the
        percentage (the bar shows it) and, where there is an ETA, the rate behind it."""
        count = f"{self.done}/{self.total}" if self.total else self.done
        text = f"{count} {self.unit}"
        text += "" if brief and self.eta_s is not None else f", {self.rate} {self.unit}/s"
        text += f", {self.percent}%" if not brief and self.percent is not None else ""
        text += f", ETA {self.eta_s}s" if self.eta_s is not None else ""
        return text + (f"; {self.figures}" if self.figures else "")


def parse(text: str) -> Event | None:
    """The progress event in one log line (its logger's prefix ignored), or None."""
    match = _LINE.search(text.rstrip("\r\n"))
    if not match:
        return None
    percent, eta = (int(match[k]) if match[k] else None for k in ("percent", "eta"))
    return Event(match["what"].strip(), match["done"], match["total"] or "", match["unit"],
                 match["rate"], percent, eta, match["figures"] or "")


class Progress:
    """Counted progress (records, messages): ``update`` as work is done, ``finish`` at the end."""

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
        return line(self.what, self.done, self.unit, (now or time.monotonic()) - self.start,
                    self.total)

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
