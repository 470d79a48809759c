"""Time budgets for measuring converted models: the deadline of freeze_quantize's sweep and the
seconds a latency figure may take.

Work is done in units (a LiteRT call on some rows), and a unit is started only when the one
before it says it would end in time: a unit already running cannot be interrupted, so the
overshoot is at most one unit's misprediction, and the units are kept short where their size
can be chosen (``chunk_sizes``). The clock is injectable so that tests can script time.
"""

import dataclasses
import math
import statistics
import time
from typing import Callable, Iterator, List


class OutOfTime(Exception):
    """The deadline passed before anything could be measured; the message says what."""


@dataclasses.dataclass(frozen=True)
class Deadline:
    """A point in time work must end by (``at`` on ``clock``); ``at`` inf: none."""

    at: float = math.inf
    clock: Callable[[], float] = time.monotonic
    budget: float = 0.0  # the seconds it was set from, for messages (0: none)

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> "Deadline":
        """``seconds`` from now; 0: no deadline."""
        return cls(clock() + seconds if seconds else math.inf, clock, seconds)

    @property
    def bounded(self) -> bool:
        return not math.isinf(self.at)

    def left(self) -> float:
        return self.at - self.clock()

    def passed(self) -> bool:
        return self.left() <= 0

    def allows(self, seconds: float) -> bool:
        """Whether work expected to take ``seconds`` would end by the deadline."""
        return seconds <= self.left()

    def describe(self) -> str:
        """The budget as messages name it (its one user is freeze_quantize's sweep)."""
        return f"the sweep_seconds budget of {self.budget:g}s"


NO_DEADLINE = Deadline()


def chunk_sizes(total: int, step: int, deadline: Deadline, target_seconds: float = 1.0,
                largest: int = 256) -> Iterator[int]:
    """Sizes (multiples of ``step`` rows) to process ``total`` rows in before the deadline.

    The first chunk is one step; each later one is sized from the time per row measured so
    far to take about ``target_seconds`` (at most ``largest`` rows) and shrunk to what the
    deadline still allows. Stops when the rows are done or not one step would end in time.
    The caller does the work of each size yielded, between yields.
    """
    done, per_row = 0, None
    while done < total:
        if per_row is None:
            size = 0 if deadline.passed() else step
        else:
            size = _next_size(per_row, step, deadline, target_seconds, max(largest, step))
        if not size:
            return
        size = min(size, total - done)
        started = deadline.clock()
        yield size
        per_row = (deadline.clock() - started) / size
        done += size


def _next_size(per_row: float, step: int, deadline: Deadline, target_seconds: float,
               largest: int) -> int:
    """Rows for the next chunk (a multiple of step); 0: not one step would end in time."""
    if per_row <= 0:  # faster than the clock can tell
        return 0 if deadline.passed() else largest // step * step
    fits = deadline.left() / per_row
    if fits < step:
        return 0
    rows = min(target_seconds / per_row, largest, fits)
    return max(step, int(rows // step) * step)


@dataclasses.dataclass(frozen=True)
class Timed:
    """A latency figure: the median seconds per call, over ``runs`` timed calls."""

    seconds: float
    runs: int
    stopped: str = ""  # the limit that stopped it before ``runs`` calls: seconds, deadline


def time_calls(call: Callable[[], object], runs: int, seconds: float,
               deadline: Deadline = NO_DEADLINE, expected: float = 0.0,
               clock: Callable[[], float] = time.perf_counter) -> Timed:
    """Time ``call`` until ``runs`` calls are timed or ``seconds`` are spent, whichever first.

    The first call allocates and warms up: it counts only when it is the one call made. A
    call is made only when the last one's duration says it would end within ``seconds`` and
    before ``deadline``; a first call (expected to take ``expected`` seconds) that the
    deadline does not allow is OutOfTime. ``stopped`` says which limit ended the runs early.
    """
    if deadline.passed() or not deadline.allows(expected):
        raise OutOfTime(f"a call expected to take {expected:.2f}s would not end in time")
    started = clock()
    times: List[float] = []
    stopped = ""
    while len(times) < runs + 1:
        if times:
            spent, last = clock() - started, times[-1]
            if spent + last > seconds:
                stopped = "seconds"
                break
            if not deadline.allows(last):
                stopped = "deadline"
                break
        begun = clock()
        call()
        times.append(clock() - begun)
    timed = times[1:] or times
    return Timed(statistics.median(timed), len(timed), stopped)
