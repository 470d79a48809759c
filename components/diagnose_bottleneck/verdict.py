"""The verdict (input-, compute- or memory-bound) with the numbers behind it, and remedies
ranked by how much of the bound they address, naming the tfkfp knob and value to set."""

import dataclasses
import math
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.platform.cpus import container_cpus
from tfkfp.components.common.training import strategies
from tfkfp.components.diagnose_bottleneck.memory import HEADROOM

INPUT, COMPUTE, MEMORY = "input-bound", "compute-bound", "memory-bound"
SMALL_SHARD_MB = 1.0  # shards smaller than this cost more to open than to read
PARALLEL_READS = 8  # the reader interleaves up to this many files
TARGET_SHARD_MB = 128.0  # shard_tfrecords' default shard size
FAST_STEP_MS = 5.0  # steps shorter than this are dominated by per-step dispatch
# Decompression's part of reading GZIP TFRecords: the benchmark table read 302k records/s
# GZIP and 376k uncompressed (the rest is storage, framing and checksums)
INFLATING = 0.25
WAITING = 0.5  # a step waiting for input this share of its time or more is input-bound
RATE_WEIGHT = 0.5  # what the log of (step alone / input alone) adds to the wait
# Evidence this near WAITING is a close call, so both sides' remedies matter: as near as an
# input 1.25x slower than the step alone moves it (0.11)
CLOSE_CALL = RATE_WEIGHT * math.log(1.25)
CONTENTION = 0.8  # both together below this share of the slower one alone: shared cores
# The strategies a compute-bound step is pointed to: one process on every local GPU, and
# workers on several machines stepping together, each with its share of the batch.
EVERY_GPU = strategies.names(devices="local", multi_process=False)[0]
MORE_MACHINES = strategies.names(devices="cluster", sync=True)[0]


@dataclasses.dataclass(frozen=True)
class Remedy:
    action: str  # what to do
    knob: str  # the tfkfp parameter and value that does it, or "" where none applies
    why: str  # the figures that make it apply

    def text(self) -> str:
        knob = f" (`{self.knob}`)" if self.knob else ""
        return f"{self.action}{knob}: {self.why}"


def decide(f: Dict[str, Any]) -> Tuple[str, str]:
    """The verdict and one sentence of numbers that justify it."""
    if not f["memory_fits"] or f.get("out_of_memory"):
        what = (f"ran out of memory ({f['out_of_memory']})" if f.get("out_of_memory") else
                f"needs about {f['step_memory_mb']:,.0f} MB")
        return MEMORY, (
            f"a training step at batch_size={f['batch_size']} {what}: parameters, gradients "
            f"and optimizer slots {f['parameter_mb']:,.1f} MB, activations "
            f"{f['activation_mb']:,.1f} MB, input batch {f['input_batch_mb']:,.1f} MB, cache "
            f"{f['cache_mb']:,.1f} MB; the budget ({f['memory_budget_source']}) is "
            f"{f['memory_budget_mb']:,.0f} MB, of which {HEADROOM:.0%} may go to training")
    fed, step = f["input_records_per_second"], f["compute_records_per_second"]
    wait = f"the step waits for input {f['input_wait_fraction']:.0%} of the time"
    evidence = input_evidence(f)
    close = (f"; a close call: the wait and the rates together count as waiting "
             f"{evidence:.0%} of the time, near the {WAITING:.0%} line, so both sides' "
             "remedies help" if close_call(evidence) else "")
    if evidence >= WAITING:
        return INPUT, (f"{wait}; input delivers {fed:,.0f} records/s, the model consumes "
                       f"{step:,.0f} records/s ({step / max(fed, 1e-9):.1f}x more)"
                       + _contention(f) + close)
    return COMPUTE, (f"the model consumes {step:,.0f} records/s, input delivers {fed:,.0f} "
                     f"records/s ({fed / max(step, 1e-9):.1f}x more); {wait}"
                     + _contention(f) + close)


def input_evidence(f: Dict[str, Any]) -> float:
    """How input-bound the step is, on the scale of its measured wait for input (0.5 or
    more: input-bound). A step that waits half its time or more is input-bound whatever the
    separate rates say (on shared cores the step alone runs faster than it can beside its
    input pipeline); an input slower alone than the step adds to the wait, smoothly (the
    step alone 1.25x the input: +0.11; 2x: +0.35), so a verdict does not flip on a threshold
    of the rates when they are measured a few percent apart between runs."""
    fed, step = f["input_records_per_second"], f["compute_records_per_second"]
    wait = f["input_wait_fraction"]
    slower = math.log(max(step, 1e-9) / max(fed, 1e-9))
    return max(wait, wait + RATE_WEIGHT * slower)


def close_call(evidence: float) -> bool:
    """Whether input_evidence lies near enough the line (WAITING) that runs measured apart
    could fall on either side of it."""
    return abs(evidence - WAITING) < CLOSE_CALL


def _contention(f: Dict[str, Any]) -> str:
    """On a CPU the input pipeline and the step share the cores: together they can reach
    less than either alone."""
    both = f["combined_records_per_second"]
    alone = min(f["input_records_per_second"], f["compute_records_per_second"])
    if f["gpus"] or both >= CONTENTION * alone:
        return ""
    return (f"; together they reach only {both:,.0f} records/s, as the input pipeline and the "
            f"step share the container's {container_cpus()} CPU(s)")


def remedies(verdict: str, f: Dict[str, Any]) -> List[Remedy]:
    """Most effective first; in a close call the other side's follow, at lower rank."""
    sides = {INPUT: _input, COMPUTE: _compute, MEMORY: _memory}
    ranked = sides[verdict](f)
    if verdict != MEMORY and close_call(input_evidence(f)):
        other = sides[COMPUTE if verdict == INPUT else INPUT](f)
        ranked += [(score / 2, remedy) for score, remedy in other]
    out: List[Remedy] = []
    for _, remedy in sorted(ranked, key=lambda pair: -pair[0]):
        if remedy.knob not in [r.knob for r in out if r.knob]:  # one remedy per knob value
            out.append(remedy)
    return out


def _input(f: Dict[str, Any]) -> List[Tuple[float, Remedy]]:
    """Each remedy scored by the share of the input time it removes: reading's share (storage,
    framing, decompression) or parsing's, times the part of it the remedy saves."""
    read_share = min(1.0, f["input_records_per_second"] / max(f["read_records_per_second"], 1))
    out = []
    mean_shard = f["shards_mb"] / max(f["num_shards"], 1)
    if f["compression"] == "gzip":
        out.append((read_share * INFLATING, Remedy(
            "store the shards uncompressed", "shard_tfrecords compression='none'",
            f"reading and decompressing the GZIP shards runs at only "
            f"{f['read_records_per_second']:,.0f} records/s "
            f"({f['read_mb_per_second']:,.1f} MB/s), before any parsing")))
    if f["num_shards"] > PARALLEL_READS and mean_shard < SMALL_SHARD_MB:
        count = max(2, math.ceil(f["shards_mb"] / TARGET_SHARD_MB))
        out.append((read_share * 0.8, Remedy(
            "write fewer, larger shards", f"shard_tfrecords num_shards={count}",
            f"{f['num_shards']} shards of {mean_shard * 1024:,.0f} KB on average: opening "
            "each file costs more than reading it")))
    elif f["num_shards"] < PARALLEL_READS and f["shards_mb"] > PARALLEL_READS * 16:
        out.append((read_share * 0.5, Remedy(
            "write more shards so several are read in parallel",
            f"shard_tfrecords num_shards={PARALLEL_READS}",
            f"{f['num_shards']} shard(s) of {mean_shard:,.0f} MB: the reader interleaves up to "
            f"{PARALLEL_READS} files")))
    if not f["cache"] and f["train_payload_mb"] < 0.5 * f["host_available_mb"]:
        out.append((read_share, Remedy(
            "cache the serialized records in memory after the first epoch", "train cache=True",
            f"the train split is {f['train_payload_mb']:,.1f} MB serialized and "
            f"{f['host_available_mb']:,.0f} MB are available; this skips reading and "
            "decompressing, not parsing")))
    out += _parse_remedies(f, 1.0 - read_share)
    return out


def _parse_remedies(f: Dict[str, Any], parse_share: float) -> List[Tuple[float, Remedy]]:
    out = []
    if f.get("layout") == "columns" and f.get("packable_columns", 0) >= 2:
        out.append((parse_share * 0.9, Remedy(
            "pack the numeric features into one list per dtype",
            "shard_tfrecords layout='packed'",
            f"parsing is {parse_share:.0%} of the input time and the shards hold "
            f"{f['packable_columns']} scalar number features one feature each; packed, a "
            "batch parses them as one list per dtype (about 2x faster on a 32-float table)")))
    if f["largest_fitting_batch"] >= 4 * f["batch_size"]:
        out.append((parse_share * 0.5, Remedy(
            "parse larger batches", f"train batch_size={4 * f['batch_size']}",
            f"parsing is {parse_share:.0%} of the input time and runs per batch "
            f"(tf.io.parse_example); a 4x batch still fits memory (up to "
            f"{f['largest_fitting_batch']:,} per replica)")))
    out.append((parse_share * 0.3, Remedy(
        "give the input pipeline more CPU cores", "",
        f"tf.data parses on the container's {container_cpus()} CPU(s), which the step also uses; "
        "raise the pod's CPU request, or move parsing off the host (tf.data service)")))
    return out


def _compute(f: Dict[str, Any]) -> List[Tuple[float, Remedy]]:
    out = []
    if f.get("larger_batch_records_per_second"):
        gain = f["larger_batch_records_per_second"] / f["compute_records_per_second"] - 1
        if gain > 0.1:
            out.append((1.0 + gain, Remedy(
                "use a larger per-replica batch", f"train batch_size={f['larger_batch_size']}",
                f"measured: {f['larger_batch_records_per_second']:,.0f} records/s at "
                f"{f['larger_batch_size']} against {f['compute_records_per_second']:,.0f} at "
                f"{f['batch_size']} (+{gain:.0%}), and it fits memory")))
    if f["precision"] == "float32":
        mode = _half_precision(f)
        # measured on CPUs with bfloat16 units, a small MLP's step gained -8% to +2%: the
        # matrices are too small; on GPUs and TPUs the matrix units' fast rate is the point
        out.append((0.9 if f["gpus"] else 0.5, Remedy(
            "compute in half precision", f"train precision='{mode}'",
            "halves activation memory and runs matrix units at their fast rate on GPUs, TPUs "
            "and, for large matrix products, CPUs with bfloat16 support (AMX/AVX512-BF16)")))
    if f["step_ms"] < FAST_STEP_MS:
        out.append((0.8, Remedy(
            "run more steps per call", "train steps_per_execution=32",
            f"a step takes only {f['step_ms']:.2f} ms, so per-step dispatch is a large share "
            "(train runs 8 per call by default)")))
    out.append((0.7, Remedy(
        "compile the step with XLA", "train jit_compile=True",
        f"fuses the {f['parameters']:,}-parameter model's ops into fewer kernels")))
    out.append((0.6, _device_remedy(f)))
    return out


def _half_precision(f: Dict[str, Any]) -> str:
    """The half-precision policy of the device: float16 on GPUs, bfloat16 on CPUs and TPUs."""
    return "mixed_float16" if f["gpus"] else "mixed_bfloat16"


def _device_remedy(f: Dict[str, Any]) -> Remedy:
    if f["gpus"] > 1 and f["strategy"] != EVERY_GPU:
        return Remedy("train on every GPU", f"train strategy='{EVERY_GPU}'",
                      f"{f['gpus']} GPUs are visible, the strategy {f['strategy']!r} uses one")
    return Remedy("use a faster device or more machines",
                  f"train strategy='{MORE_MACHINES}', workers=N",
                  f"one step consumes {f['compute_records_per_second']:,.0f} records/s on "
                  f"{'a GPU' if f['gpus'] else f'{container_cpus()} CPU(s)'}; a GPU or TPU, "
                  "or N workers each with its share of the batch, raise that")


def _memory(f: Dict[str, Any]) -> List[Tuple[float, Remedy]]:
    out = []
    fits = f["largest_fitting_batch"]
    if fits >= 1:
        batch = 2 ** int(math.log2(fits))
        out.append((1.0, Remedy(
            "use a smaller per-replica batch", f"train batch_size={batch}",
            f"the largest batch that fits the {f['memory_budget_mb']:,.0f} MB budget is "
            f"about {fits:,}")))
    half = f["largest_fitting_batch_half_precision"]
    if f["precision"] == "float32" and half >= f["batch_size"]:
        mode = _half_precision(f)
        out.append((0.9, Remedy(
            "keep activations in half precision", f"train precision='{mode}'",
            f"activations take {f['activation_mb']:,.1f} MB; at half the size batch_size="
            f"{f['batch_size']} fits (up to about {half:,})")))
    if f["cache"] and f["cache_mb"] > 0.25 * f["memory_budget_mb"]:
        out.append((0.8, Remedy(
            "do not cache the dataset in memory", "train cache=False",
            f"the cache holds {f['cache_mb']:,.1f} MB of the {f['memory_budget_mb']:,.0f} MB")))
    if f["parameter_mb"] > 0.5 * f["step_memory_mb"] or fits < 1:
        out.append((0.7, Remedy(
            "use a smaller model", "train hidden_units=... or model_name=...",
            f"{f['parameters']:,} parameters take {f['parameter_mb']:,.1f} MB with gradients "
            "and Adam's two slots")))
    out.append((0.5, Remedy(
        "run on a device or pod with more memory", "",
        f"the budget is {f['memory_budget_mb']:,.0f} MB ({f['memory_budget_source']})")))
    return out
