"""The verdict and the ranking of remedies, on figures given directly (no measuring)."""

import pytest

from tfkfp.components.diagnose_bottleneck.verdict import COMPUTE, INPUT, MEMORY, decide, remedies

BASE = {
    "memory_fits": True, "batch_size": 64, "precision": "float32", "cache": False, "gpus": 0,
    "strategy": "default", "parameters": 50_000, "parameter_mb": 0.8, "activation_mb": 0.3,
    "input_batch_mb": 0.03, "cache_mb": 0.0, "step_memory_mb": 1.1, "memory_budget_mb": 20_000,
    "memory_budget_source": "available host memory", "host_available_mb": 20_000,
    "largest_fitting_batch": 1_000_000, "largest_fitting_batch_half_precision": 2_000_000,
    "compression": "none", "num_shards": 2, "shards_mb": 2.0, "train_payload_mb": 2.0,
    "read_records_per_second": 100_000.0, "read_mb_per_second": 100.0,
    "input_records_per_second": 40_000.0, "compute_records_per_second": 10_000.0,
    "combined_records_per_second": 9_500.0, "input_wait_fraction": 0.05, "step_ms": 6.4}


def figures(**changes):
    return {**BASE, **changes}


def test_faster_input_than_step_is_compute_bound_with_the_numbers():
    verdict, summary = decide(figures())
    assert verdict == COMPUTE
    assert "consumes 10,000 records/s" in summary and "delivers 40,000 records/s" in summary
    assert "waits for input 5% of the time" in summary


def test_slower_input_is_input_bound_and_says_how_long_the_step_waits():
    verdict, summary = decide(figures(input_records_per_second=4_000.0,
                                      combined_records_per_second=3_700.0,
                                      input_wait_fraction=0.63))
    assert verdict == INPUT
    assert summary.startswith("the step waits for input 63% of the time; input delivers "
                              "4,000 records/s, the model consumes 10,000 records/s")


def test_a_step_over_the_budget_is_memory_bound_whatever_the_rates():
    verdict, summary = decide(figures(memory_fits=False, step_memory_mb=900.0,
                                      memory_budget_mb=512.0, largest_fitting_batch=30))
    assert verdict == MEMORY and "needs about 900 MB" in summary and "512 MB" in summary
    ranked = remedies(MEMORY, figures(memory_fits=False, largest_fitting_batch=30))
    assert ranked[0].knob == "train batch_size=16"


def test_reading_gzip_ranks_storage_remedies_first():
    slow_read = figures(compression="gzip", num_shards=64, shards_mb=0.2,
                        read_records_per_second=5_000.0, input_records_per_second=4_000.0,
                        input_wait_fraction=0.6)  # clearly input-bound: no close call
    knobs = [r.knob for r in remedies(INPUT, slow_read)]
    assert knobs[:3] == ["train cache=True", "shard_tfrecords num_shards=2",
                         "shard_tfrecords compression='none'"]
    assert knobs.index("shard_tfrecords compression='none'") < knobs.index(
        "train batch_size=256")


def test_parsing_ranks_larger_batches_first():
    slow_parse = figures(read_records_per_second=400_000.0, input_records_per_second=4_000.0)
    ranked = remedies(INPUT, slow_parse)
    assert ranked[0].knob == "train batch_size=256"
    assert "parsing is 99% of the input time" in ranked[0].why


def test_a_measured_larger_batch_gain_ranks_first_when_compute_bound():
    gain = figures(larger_batch_size=256, larger_batch_records_per_second=30_000.0)
    ranked = remedies(COMPUTE, gain)
    assert ranked[0].knob == "train batch_size=256" and "+200%" in ranked[0].why
    assert "train precision='mixed_bfloat16'" in [r.knob for r in ranked]
    assert "train precision='mixed_float16'" in [r.knob for r in remedies(COMPUTE, figures(
        gpus=1))]
    assert "train strategy='mirrored'" in [r.knob for r in remedies(COMPUTE, figures(gpus=4))]


def test_shared_cores_are_named_when_together_is_slower_than_either_alone():
    _, summary = decide(figures(combined_records_per_second=5_000.0, input_wait_fraction=0.5))
    assert "together they reach only 5,000 records/s" in summary
    _, summary = decide(figures(combined_records_per_second=5_000.0, gpus=1))
    assert "together" not in summary


def test_a_close_call_says_so_and_adds_the_other_sides_remedies_after_its_own():
    close = figures(input_records_per_second=9_000.0, input_wait_fraction=0.5)
    verdict, summary = decide(close)
    assert verdict == INPUT and "a close call" in summary
    assert "count as waiting 55% of the time, near the 50% line" in summary
    knobs = [r.knob for r in remedies(INPUT, close)]
    assert knobs.index("train batch_size=256") < knobs.index("train jit_compile=True")
    assert len(knobs) == len(set(knobs)), "a knob value is suggested twice"


@pytest.mark.parametrize("wait, verdict, close", [
    (0.37, COMPUTE, False), (0.42, COMPUTE, True), (0.58, INPUT, True), (0.63, INPUT, False)])
def test_a_close_call_is_the_evidence_near_the_verdicts_line(wait, verdict, close):
    """The input 4x the step alone adds nothing to the wait: the evidence is the wait, and
    within 0.11 of 0.5 either verdict names both sides' remedies, however far the rates."""
    f = figures(input_wait_fraction=wait)
    got, summary = decide(f)
    assert got == verdict and ("a close call" in summary) is close
    other_side = "train jit_compile=True" if verdict == INPUT else "train cache=True"
    assert (other_side in [r.knob for r in remedies(verdict, f)]) is close


def test_slow_parsing_of_one_feature_per_column_ranks_the_packed_layout_first():
    slow_parse = figures(read_records_per_second=400_000.0, input_records_per_second=4_000.0,
                         layout="columns", packable_columns=32)
    ranked = remedies(INPUT, slow_parse)
    assert ranked[0].knob == "shard_tfrecords layout='packed'"
    assert "32 scalar number features one feature each" in ranked[0].why
    packed = [r.knob for r in remedies(INPUT, {**slow_parse, "layout": "packed"})]
    assert "shard_tfrecords layout='packed'" not in packed


def test_rates_within_25_percent_are_decided_by_how_long_the_step_waits():
    """Close rates swing either way between runs on shared cores (a GZIP table gave
    compute-bound 3 times in 4 while its step waited for input 71-89% of the time)."""
    seen = figures(input_records_per_second=126_516.0, compute_records_per_second=123_541.0,
                   combined_records_per_second=13_599.0, input_wait_fraction=0.89)
    verdict, summary = decide(seen)
    assert verdict == INPUT and "waits for input 89% of the time" in summary
    assert "close call" not in summary  # however near the rates, the wait leaves no doubt
    verdict, _ = decide({**seen, "input_wait_fraction": 0.1})
    assert verdict == COMPUTE
    verdict, _ = decide(figures(input_records_per_second=4_000.0, input_wait_fraction=0.1))
    assert verdict == INPUT  # far apart, the rates decide


def test_a_step_waiting_most_of_its_time_is_never_called_compute_bound():
    """Measured apart, input can look faster than the step although, sharing the cores,
    the fed step waits for it most of the time: the wait wins over the rates."""
    verdict, summary = decide(figures(input_wait_fraction=0.71))  # input 4x the step alone
    assert verdict == INPUT and "waits for input 71% of the time" in summary
    assert decide(figures(input_wait_fraction=0.49))[0] == COMPUTE


def test_input_remedies_rank_by_the_share_of_input_time_they_remove():
    """The benchmark table, GZIP, one feature per column, batch 256 (read 302k records/s,
    parsed 178k): measured with train, caching gained 28%, the packed layout 18%, no
    compression 11% (a 4x batch 37%, which parsing per batch alone does not predict)."""
    gzip_columns = figures(compression="gzip", layout="columns", packable_columns=32,
                           read_records_per_second=302_026.0,
                           input_records_per_second=178_251.0, batch_size=256)
    ranked = [r.knob for r in remedies(INPUT, gzip_columns)]
    assert ranked[:2] == ["train cache=True", "shard_tfrecords layout='packed'"]
    assert ranked.index("shard_tfrecords compression='none'") <= 3


def test_a_call_of_a_multi_step_train_function_counts_every_step():
    """train compiles with steps_per_execution (8): one call of its train function runs 8
    steps, so the step's rate counts 8 batches a call (it counted one: the step alone read
    8x slower than train runs it, and input-bound tables were called compute-bound)."""
    from tfkfp.components.diagnose_bottleneck.measure import MIN_STEPS, step_rate

    calls = []
    rate = step_rate(lambda iterator: calls.append(1), iter(()), global_batch=64,
                     seconds=0.0, warmup=0, steps_per_call=8)  # no time: MIN_STEPS calls
    assert len(calls) == MIN_STEPS and rate.records == MIN_STEPS * 8 * 64


def test_rates_a_few_percent_apart_across_the_close_call_line_keep_their_verdict():
    """The GZIP one-feature-per-column table at batch 256 measured the step alone 1.25x
    and 1.21x the input in two runs, both waiting 44-45%: one verdict, not one each."""
    runs = [figures(input_records_per_second=135_028.0, compute_records_per_second=168_813.0,
                    input_wait_fraction=0.45),
            figures(input_records_per_second=135_232.0, compute_records_per_second=164_052.0,
                    input_wait_fraction=0.44)]
    assert {decide(f)[0] for f in runs} == {INPUT}
    assert decide(figures(input_records_per_second=182_093.0,
                          compute_records_per_second=154_802.0,
                          input_wait_fraction=0.46))[0] == COMPUTE  # input faster alone
