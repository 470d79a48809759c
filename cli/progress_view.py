"""The console's view of running tasks: the progress lines their steps log, as they log them.

Every step reports progress through common.platform.progress, whose lines ``parse`` reads
back from a task's output as the run streams it to the task's log. In a terminal the view is
one updating line per running task below the start and done lines (rich's Live display,
cleared when the run ends); elsewhere (a CI log, a pipe) it prints a task's first progress
line and then one at most every ``every_s`` seconds, as plain text.
"""

import threading
import time
from typing import Dict, List, TextIO

from tfkfp.components.common.platform.progress import Event, parse

PLAIN_EVERY_S = 10.0  # a piped run's cadence per task: a CI log stays readable
INDENT = " " * 7  # under the task name of the start and done lines
BAR_WIDTH = 10


class ProgressView:
    """A context manager over a run's console; ``say`` prints a line above the live lines."""

    def __init__(self, console: TextIO, every_s: float = PLAIN_EVERY_S):
        from rich.console import Console

        self.stream, self.every_s = console, every_s
        self.rich = Console(file=console, highlight=False)
        self.terminal = self.rich.is_terminal and not self.rich.is_dumb_terminal
        self.latest: Dict[str, Event | None] = {}  # running tasks, in the order they started
        self._partial: Dict[str, str] = {}
        self._shown: Dict[str, float] = {}  # when a task's last plain line was printed
        self._lock = threading.RLock()
        self._live = None

    def __enter__(self) -> "ProgressView":
        if self.terminal:
            from rich.live import Live

            self._live = Live(console=self.rich, get_renderable=self.render, transient=True,
                              refresh_per_second=4, redirect_stdout=False,
                              redirect_stderr=False)
            self._live.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # The live display calls render (which takes this view's lock) holding its own lock, so
    # this view never calls into it holding its lock: rich orders its own printing.

    def say(self, line: str) -> None:
        if self._live is not None:
            from rich.text import Text

            self._live.console.print(Text(line), soft_wrap=True)
            return
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()

    def started(self, task: str) -> None:
        with self._lock:
            self.latest[task] = None

    def ended(self, task: str) -> None:
        with self._lock:
            self.latest.pop(task, None)
            self._partial.pop(task, None)
            self._shown.pop(task, None)
        self._redraw()  # the next line printed is not followed by the task's old line

    def _redraw(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def feed(self, task: str, text: str) -> None:
        """What the task wrote (any part of a line); its complete progress lines count."""
        with self._lock:
            lines = (self._partial.get(task, "") + text).replace("\r", "\n").split("\n")
            self._partial[task] = lines.pop()
            events = [e for e in map(parse, lines) if e is not None and task in self.latest]
            plain = [self._noted(task, event) for event in events]
        if events and self.terminal:
            self._redraw()
        for line in filter(None, plain):
            self.say(line)

    def _noted(self, task: str, event: Event) -> str:
        """Keeps the task's latest event; the plain line to print for it now, if any."""
        self.latest[task] = event
        now = time.monotonic()
        if self.terminal or (task in self._shown and now - self._shown[task] < self.every_s):
            return ""
        self._shown[task] = now
        return plain_line(task, event)

    def render(self):
        """The live lines: each running task that reported, its bar when it has a total."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        reported = self._reported()
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(no_wrap=True, min_width=max((len(t) for t, _ in reported), default=0)
                        + len(INDENT) + 1)
        grid.add_column(width=BAR_WIDTH)
        grid.add_column(width=4, justify="right")
        grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)  # what gives way
        for task, event in reported:
            known = event.percent is not None
            bar = ProgressBar(total=100, completed=event.percent, width=BAR_WIDTH) if known else ""
            grid.add_row(INDENT + task, bar, f"{event.percent}%" if known else "",
                         event.figures_text())
        return grid

    def _reported(self) -> List[tuple]:
        with self._lock:
            return [(t, e) for t, e in self.latest.items() if e is not None]


def plain_line(task: str, event: Event) -> str:
    return f"{INDENT}{task}  {event.text}"
