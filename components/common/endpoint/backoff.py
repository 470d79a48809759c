"""When the suite's HTTP client (client.py) tries a request again: urllib3's ``Retry``, which
counts the attempts, tells a lost connection, a timeout and a retried status apart, and reads
a server's ``Retry-After`` (seconds or a date), with the suite's schedule on top.

What ``Backoff`` changes in urllib3's ``Retry``:

- the wait: 0.5 s doubling up to 15 s, jittered by +-20 % so restarted senders do not arrive
  together, from the first retry on (urllib3 retries the first at once), or ``every_s``;
- ``Retry-After`` is honoured on every retried status, at most 15 s (urllib3: on 413, 429 and
  503 only, however long), and only the statuses asked for are retried (urllib3 would also
  retry a 413 that carries the header: a request too big, which the caller halves instead);
- every method is retried (predicting is stateless), and ``give_up_at`` (time.monotonic())
  ends the retries when the count does not;
- each wait is reported to ``on_wait(last attempt, seconds, failures so far)`` and slept
  through ``sleep`` (time.sleep; injected in tests).
"""

import random
import time
from typing import Any, Callable

from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import RequestHistory, Retry

RETRIED = frozenset({429, 502, 503, 504})  # the server sheds load or is (re)starting
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 15.0

OnWait = Callable[[RequestHistory, float, int], None]


class Backoff(Retry):
    """urllib3's Retry with the suite's schedule (see the module docstring)."""

    def __init__(self, total: int | None = 0, *, every_s: float | None = None,
                 give_up_at: float | None = None, on_wait: OnWait | None = None,
                 sleep: Callable[[float], None] = time.sleep, **kwargs: Any):
        kwargs.setdefault("allowed_methods", None)  # None: every method
        super().__init__(total, **kwargs)
        self.every_s, self.give_up_at, self.on_wait, self.sleeper = (every_s, give_up_at,
                                                                     on_wait, sleep)

    def new(self, **kw: Any) -> "Backoff":
        made = super().new(**kw)  # urllib3 makes one per attempt from its own arguments
        made.every_s, made.give_up_at, made.on_wait, made.sleeper = (
            self.every_s, self.give_up_at, self.on_wait, self.sleeper)
        return made

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        return status_code in self.status_forcelist

    def is_exhausted(self) -> bool:
        late = self.give_up_at is not None and time.monotonic() > self.give_up_at
        return late or super().is_exhausted()

    def get_backoff_time(self) -> float:
        if self.every_s is not None:
            return self.every_s
        failures = len(self.history)
        if not failures:
            return 0.0
        return wait_after(failures)

    def get_retry_after(self, response: Any) -> float | None:
        value = response.headers.get("Retry-After") if response is not None else None
        if value is None:
            return None
        try:
            seconds = self.parse_retry_after(value)
        except InvalidHeader:
            try:
                seconds = float(value)  # "1.5": not HTTP's integer, but meant as seconds
            except ValueError:
                return None
        return min(MAX_BACKOFF_S, max(0.0, seconds))

    def sleep(self, response: Any = None) -> None:
        wait = self.get_retry_after(response) if self.respect_retry_after_header else None
        wait = self.get_backoff_time() if wait is None else wait
        if self.on_wait is not None:
            self.on_wait(self.history[-1], wait, len(self.history))
        self.sleeper(wait)


def wait_after(failures: int) -> float:
    """Seconds to wait after ``failures`` failed attempts in a row (1: 0.5 s, jittered)."""
    doubled = FIRST_BACKOFF_S * 2 ** min(failures - 1, 16)
    return min(MAX_BACKOFF_S, doubled) * random.uniform(0.8, 1.2)

