"""Where batch prediction's time goes: the busy seconds of each overlapped stage (reading and
parsing, the model, formatting and writing) and how long the model waited for each of its
neighbours. The stage with the most busy seconds bounds the run when the stages overlap;
waits say whether the model was starved (input) or held back (writer)."""

import contextlib
import time
from typing import Callable, Dict, Iterable, Iterator

STAGES = ("read", "predict", "write")
WAITS = ("wait_input", "wait_writer")


class StageClock:
    """Seconds per stage; each stage is timed from one thread only."""

    def __init__(self, now: Callable[[], float] = time.perf_counter):
        self.now = now
        self.seconds: Dict[str, float] = {name: 0.0 for name in (*STAGES, *WAITS)}

    @contextlib.contextmanager
    def timing(self, name: str):
        started = self.now()
        try:
            yield
        finally:
            self.seconds[name] += self.now() - started

    def timed_iter(self, name: str, items: Iterable) -> Iterator:
        """The items, with the time spent producing each one counted to ``name``."""
        iterator = iter(items)
        while True:
            with self.timing(name):
                try:
                    item = next(iterator)
                except StopIteration:
                    return
            yield item

    def timed(self, name: str, function: Callable) -> Callable:
        def call(*args, **kwargs):
            with self.timing(name):
                return function(*args, **kwargs)
        return call

    def figures(self) -> Dict:
        """Rounded seconds per stage and wait, and the stage that bounds the run."""
        out: Dict = {name: round(value, 3) for name, value in self.seconds.items()}
        out["bound_by"] = max(STAGES, key=lambda name: self.seconds[name])
        return out
