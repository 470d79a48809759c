"""The sweep's time budgets on a scripted clock (no TensorFlow, no waiting): chunks and timed
calls that stop before a deadline, the choice among modes measured in full, and the report,
metadata and metrics that name the modes cut short."""

import math

import pytest

from tfkfp.components.common.tflite.budget import (
    NO_DEADLINE,
    Deadline,
    OutOfTime,
    chunk_sizes,
    time_calls,
)
from tfkfp.components.common.tflite.parity import Figures, Gate, QualityGateError
from tfkfp.components.freeze_quantize.choice import choose
from tfkfp.components.freeze_quantize.options import QuantizeOptions
from tfkfp.components.freeze_quantize.result import FreezeQuantizeResult


class Clock:
    """Time that moves only when work is done."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds: float) -> None:
        self.now += seconds


def test_a_deadline_of_zero_seconds_is_none():
    clock = Clock()
    assert not Deadline.after(0, clock).bounded and Deadline.after(0, clock).allows(1e9)
    deadline = Deadline.after(5, clock)
    assert deadline.bounded and deadline.allows(5) and not deadline.allows(5.1)
    clock.work(5)
    assert deadline.passed()
    assert deadline.describe() == "the sweep_seconds budget of 5s"


def _process(total, step, per_row, deadline, clock):
    sizes = []
    for size in chunk_sizes(total, step, deadline):
        clock.work(per_row * size)
        sizes.append(size)
    return sizes


@pytest.mark.parametrize("step", [1, 4])
def test_chunks_stop_before_the_deadline_without_passing_it(step):
    clock = Clock()
    deadline = Deadline.after(10, clock)
    sizes = _process(1000, step, 0.05, deadline, clock)  # 1000 rows would take 50 s
    assert sizes[0] == step and all(s % step == 0 for s in sizes)
    assert 0 < sum(sizes) < 1000
    assert clock.now <= deadline.at  # no chunk was started that would pass it
    assert deadline.left() < 0.05 * step  # and it stopped only when not one more step fit
    assert max(sizes) <= 256


def test_chunks_cover_every_row_when_there_is_time():
    clock = Clock()
    sizes = _process(1000, 1, 0.001, Deadline.after(0, clock), clock)
    assert sum(sizes) == 1000 and max(sizes) == 256  # the largest chunk by default


def test_no_chunk_starts_after_the_deadline():
    clock = Clock()
    deadline = Deadline.after(1, clock)
    clock.work(2)  # an uninterruptible conversion passed it
    assert _process(100, 1, 0.01, deadline, clock) == []


def _timed(clock, call_seconds, runs, seconds, deadline=NO_DEADLINE, expected=0.0):
    calls = []

    def call():
        clock.work(call_seconds)
        calls.append(clock.now)

    return time_calls(call, runs, seconds, deadline, expected, clock=clock), calls


def test_timing_stops_at_the_count_and_leaves_out_the_warm_up():
    timed, calls = _timed(Clock(), 0.01, runs=5, seconds=100)
    assert (timed.runs, len(calls), timed.stopped) == (5, 6, "")
    assert timed.seconds == pytest.approx(0.01)


def test_timing_stops_at_its_seconds_whichever_comes_first():
    clock = Clock()
    started = clock.now
    timed, calls = _timed(clock, 0.5, runs=1000, seconds=3)
    assert timed.stopped == "seconds" and timed.runs == len(calls) - 1 < 1000
    assert clock.now - started <= 3  # no call was started that would pass the seconds


def test_one_call_longer_than_the_seconds_is_the_figure():
    timed, calls = _timed(Clock(), 20.0, runs=20, seconds=10)
    assert (timed.runs, len(calls), timed.seconds) == (1, 1, 20.0)


def test_timing_stops_at_the_deadline_and_says_so():
    clock = Clock()
    deadline = Deadline.after(2, clock)
    timed, calls = _timed(clock, 0.3, runs=100, seconds=60, deadline=deadline)
    assert timed.stopped == "deadline" and 0 < timed.runs < 100
    assert clock.now <= deadline.at
    with pytest.raises(OutOfTime):  # the first call is expected to pass it
        _timed(clock, 0.3, runs=100, seconds=60, deadline=deadline, expected=5.0)


def _figures(mode, size, cut_short="", accuracy=0.9):
    return Figures(mode=mode, size_bytes=size, accuracy=accuracy, reference_accuracy=0.9,
                   agreement=1.0, max_abs_diff=0.0, mean_abs_diff=0.0, examples=100,
                   latency_example_ms=1.5, latency_batch_ms=20.0, batch_size=64,
                   latency_runs_example=7, latency_runs_batch=1, cut_short=cut_short)


CUT = "evaluated 40 of 100 examples before the sweep_seconds budget of 60s ran out"


def test_a_mode_cut_short_is_not_chosen_however_small():
    figures = [_figures("none", 4000), _figures("dynamic", 1000, CUT)]
    chosen = choose(figures, {}, {"dynamic": f"cut short: {CUT}"}, "auto", Gate(), "m", 60)
    assert chosen.mode == "none"


def test_no_mode_measured_in_full_fails_naming_every_mode():
    cut = {"none": f"cut short: {CUT}"}
    skipped = {"dynamic": "not started: the sweep had spent 61.0s of its sweep_seconds "
                          "budget of 60s and a conversion took up to 3.0s"}
    with pytest.raises(QualityGateError) as err:
        choose([_figures("none", 4000, CUT)], skipped, cut, "auto", Gate(), "m", 60)
    assert str(err.value) == (
        f"auto: no mode of model m was measured in full within sweep_seconds 60 (none: cut "
        f"short: {CUT}; dynamic: skipped, {skipped['dynamic']}); raise sweep_seconds, or "
        "lower eval_examples or latency_seconds, or name fewer modes")


def _result(figures, cut, skipped=None):
    frozen = {"nodes": {"before": 10, "after": 5}, "bytes": {"before": 100, "after": 90},
              "ops": {"before": {"Conv2D": 2}, "after": {"Conv2D": 2}}, "inputs": {},
              "outputs": {}}
    return FreezeQuantizeResult(mode="none", signature="serving_default", figures=figures,
                                frozen=frozen, frozen_agreement=1.0, frozen_max_abs_diff=0.0,
                                tflite_dir="t", frozen_dir="f", seconds=70.0,
                                skipped=skipped or {}, gate=Gate(), model_dir="m",
                                sweep_seconds=60.0, cut=cut)


def test_report_metadata_and_metrics_name_the_modes_cut_short():
    nothing = ("cut short: converted in 3.0s, then not one of 100 examples was evaluated "
               "before the sweep_seconds budget of 60s ran out; nothing was measured")
    cut = {"dynamic": f"cut short: {CUT}", "float16": nothing}
    result = _result([_figures("none", 4000), _figures("dynamic", 1000, CUT)], cut,
                     {"int8": "not started: the sweep had spent 61.0s"})
    markdown = result.markdown()
    assert f"| not chosen, cut short: {CUT} |" in markdown  # its figures are kept
    assert f"| float16 | {nothing} |" in markdown
    assert "| int8 | skipped: not started" in markdown
    assert "1.500 (7 calls)" in markdown and "20.00 (x64, 1 call)" in markdown
    assert "(sweep budget 60s)" in markdown
    metadata = result.metadata()
    assert metadata["cut_short"] == cut and metadata["not_chosen"] == {}
    assert metadata["modes"]["dynamic"]["cut_short"] == CUT
    metrics = result.metrics()
    assert metrics["modes_cut_short"] == 2 and metrics["dynamic_cut_short"] == 1
    assert "none_cut_short" not in metrics
    assert metrics["none_latency_runs_example"] == 7 and metrics["none_latency_runs_batch"] == 1


@pytest.mark.parametrize("settings, message", [
    ({"latency_batch_size": 0}, "latency_batch_size 0 and latency_runs 20: each must be"),
    ({"latency_runs": 0}, "latency_batch_size 256 and latency_runs 0: each must be"),
    ({"latency_seconds": 0.0}, "latency_seconds 0.0: expected the seconds"),
    ({"latency_seconds": math.nan}, "latency_seconds nan: expected the seconds"),
    ({"latency_seconds": math.inf}, "latency_seconds inf: expected the seconds"),
])
def test_latency_settings_are_checked(settings, message):
    from tfkfp.components.common.tflite.options import QuantizeInputError

    with pytest.raises(QuantizeInputError, match=f"^{message}"):
        QuantizeOptions(quantization="auto", calibration_examples=1, eval_examples=1,
                        **settings)
