"""LiteRT latency figures of a converted model, timed for a bounded time.

Each figure is the median of up to ``Timing.runs`` calls, or fewer when ``Timing.seconds``
(per model measured, both figures together) or freeze_quantize's sweep deadline comes
first; the figures say how many calls were timed. A call is made only when the last one
says it would end in time (common.tflite.budget.time_calls), so a large model costs a few
calls, not thousands: with a fixed count (100 one-row calls and 20 of up to 256 rows, about
2,200 inferences at 100 eval examples) an InceptionV3 had not finished timing its first mode
after 19 minutes.
"""

import dataclasses
import time
from typing import Dict, Tuple

from tfkfp.components.common.tflite import litert
from tfkfp.components.common.tflite.budget import Deadline, OutOfTime, Timed
from tfkfp.components.common.tflite.inputs import Examples


@dataclasses.dataclass(frozen=True)
class Timing:
    """Latency settings: each figure is the median of up to ``runs`` calls (five times as
    many of one row), timed within ``seconds`` for a mode's figures together, whichever
    limit comes first."""

    batch_size: int = 256
    runs: int = 20  # calls timed per figure (median)
    num_threads: int = 0
    seconds: float = 10.0  # per model measured, both figures


def latencies(runner, examples: Examples, timing: Timing, fills, deadline: Deadline,
              per_row: float) -> Tuple[Dict, str]:
    """(figures per example and per batch, why the deadline cut them: "" when it did not).

    A model with a fixed batch size is timed on calls of that batch (its per-example figure
    is a call's share per row). The per-example figure has half of ``timing.seconds``, the
    batch figure the rest; a batch whose one call would take longer than that is made
    smaller (the figure says its size)."""
    started = time.perf_counter()
    if examples.batch:
        rows, _ = next(examples.batches(examples.batch))
        call, late = _timed(runner, rows, examples.batch, timing.runs, timing.seconds, fills,
                            deadline, per_row * examples.batch)
        if call is None:
            return {}, late
        return dict(latency_example_ms=1000 * call.seconds / examples.batch,
                    latency_batch_ms=1000 * call.seconds, batch_size=examples.batch,
                    latency_runs_example=call.runs, latency_runs_batch=call.runs), late
    one, late = _timed(runner, examples.features, 1, timing.runs * 5, timing.seconds / 2,
                       fills, deadline, per_row)
    if one is None or late:
        return _per_example(one), late + ("; the batch figure was not timed" if late else "")
    out = _per_example(one)
    left = timing.seconds - (time.perf_counter() - started)
    batch = min(timing.batch_size, len(examples), max(1, int(left / max(one.seconds, 1e-9))))
    call, late = _timed(runner, examples.features, batch, timing.runs, left, fills, deadline,
                        one.seconds * batch)
    if call is not None:
        out.update(latency_batch_ms=1000 * call.seconds, batch_size=batch,
                   latency_runs_batch=call.runs)
    return out, late


def _per_example(one: Timed | None) -> Dict:
    if one is None:
        return {}
    return dict(latency_example_ms=1000 * one.seconds, latency_runs_example=one.runs)


def _timed(runner, inputs, batch: int, runs: int, seconds: float, fills, deadline: Deadline,
           expected: float) -> Tuple[Timed | None, str]:
    """(the figure or None, why the deadline cut it: "" when it did not)."""
    what = "one row" if batch == 1 else f"{batch} rows"
    try:
        timed = litert.latency(runner, inputs, batch, runs, fills, seconds, deadline,
                               expected)
    except OutOfTime:
        return None, f"latency on {what} not timed: {deadline.describe()} ran out"
    if timed.stopped == "deadline":
        return timed, (f"latency on {what} timed over {timed.runs} of {runs} calls before "
                       f"{deadline.describe()} ran out")
    return timed, ""
