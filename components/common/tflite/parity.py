"""Measuring a converted model in LiteRT against the SavedModel it came from, and the
gate freeze_quantize and export_tflite apply to the figures.

What is compared follows the signature's outputs (a ``Reading``, common.tflite.binding): on
class scores, top-1 agreement with the SavedModel, and accuracy when the data's labels index
the scores; on a regressor's value with the data's labels, the RMSE of both models; on every
float output, the relative error ``|got - ref| / |ref|`` (L2 norms over all examples, the
largest over the outputs). The gate checks the accuracy drop where there is an accuracy; on
class scores without labels, the share of examples whose top class changed (which bounds the
accuracy drop) against the same limit; on a regressor's value, the relative increase of the
RMSE against ``max_rmse_increase``; on other outputs, the relative error against
``max_relative_error``. On every model it refuses outputs that do not vary over the
examples (``constant``): a model that answers the same whatever it is fed is of no use to an
app, and int8 can collapse a model so (with random weights, int8 MobileNetV2 and InceptionV3
answer all zeros) while the accuracy alone may still pass.
"""

import dataclasses
import time
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.tflite import budget, litert
from tfkfp.components.common.tflite.budget import NO_DEADLINE, Deadline, OutOfTime
from tfkfp.components.common.tflite.inputs import Examples
from tfkfp.components.common.tflite.latency import Timing, latencies


@dataclasses.dataclass(frozen=True)
class Reading:
    """Which outputs hold class scores and the top class; whether labels index the scores."""

    scores: str | None = "probabilities"
    class_ids: str | None = "class_ids"  # None: the argmax of the scores
    accuracy: bool = True
    values: str | None = None  # a regressor's value output, compared by RMSE on the labels


@dataclasses.dataclass(frozen=True)
class Gate:
    max_accuracy_drop: float = 0.01
    max_relative_error: float = 0.05
    min_agreement: float = 0.0
    max_rmse_increase: float = 0.05  # relative: 0.05 accepts an RMSE up to 5% higher


@dataclasses.dataclass(frozen=True)
class Figures:
    """One converted model measured on the evaluation examples."""

    mode: str
    size_bytes: int
    accuracy: float | None  # of the converted model; None without labels for its scores
    reference_accuracy: float | None  # of the SavedModel, same examples
    agreement: float | None  # share of examples with the SavedModel's top class; None: no scores
    max_abs_diff: float  # of the class scores (of every float output without scores)
    mean_abs_diff: float
    examples: int
    relative_error: float = 0.0  # the largest over the float outputs
    latency_example_ms: float | None = None
    latency_batch_ms: float | None = None
    batch_size: int | None = None
    rmse: float | None = None  # a regressor's, on the labels; None: no value or no labels
    reference_rmse: float | None = None  # of the SavedModel, same examples
    # the compared outputs when every one of them is the same for every example (else
    # empty); reference_constant: whether the SavedModel's are constant too
    constant: Tuple[str, ...] = ()
    reference_constant: bool = False
    seconds: float | None = None  # converting and measuring it (freeze_quantize's sweep)
    latency_runs_example: int | None = None  # calls timed for each latency figure's median
    latency_runs_batch: int | None = None
    # why the sweep's deadline stopped its measurement (the figures are what was measured
    # by then: fewer examples, or latency from fewer calls or none); "": measured in full
    cut_short: str = ""

    @property
    def accuracy_drop(self) -> float | None:
        if self.accuracy is None:
            return None
        return round(self.reference_accuracy - self.accuracy, 9)  # 0.96 - 0.95 is not 0.01

    @property
    def rmse_increase(self) -> float | None:
        """The RMSE's relative increase over the SavedModel's (0.05: 5% higher)."""
        if self.rmse is None:
            return None
        if self.reference_rmse > 0:
            return round(self.rmse / self.reference_rmse - 1.0, 9)
        return 0.0 if self.rmse == 0 else float("inf")

    @property
    def shortfall(self) -> float:
        """What the gate holds against its limit: the accuracy drop, the share of changed
        top classes, the RMSE increase, or the relative error."""
        if self.accuracy is not None:
            return self.accuracy_drop
        if self.agreement is not None:
            return round(1.0 - self.agreement, 9)
        if self.rmse is not None:
            return self.rmse_increase
        return self.relative_error

    def to_dict(self) -> Dict:
        out = dataclasses.asdict(self)
        out["accuracy_drop"] = self.accuracy_drop
        out["rmse_increase"] = self.rmse_increase
        out["constant"] = list(self.constant)
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in out.items()}

    def summary(self) -> str:
        """The figures in one line, for logs and gate messages."""
        parts = [f"{self.size_bytes:,} bytes"]
        if self.accuracy is not None:
            parts.append(f"accuracy {self.accuracy:.4f} vs {self.reference_accuracy:.4f} for "
                         f"the SavedModel")
        if self.agreement is not None:
            parts.append(f"agreement {self.agreement:.4f}")
        if self.rmse is not None:
            parts.append(f"RMSE {self.rmse:.4g} vs {self.reference_rmse:.4g} for the "
                         "SavedModel")
        parts.append(f"relative error {self.relative_error:.2e}")
        parts.append(f"max abs diff {self.max_abs_diff:.2e}")
        return ", ".join(parts)


def compare(mode: str, content: bytes, signature: str, examples: Examples,
            reference: Dict[str, np.ndarray], timing: Timing | None = None,
            fills: Dict[str, np.ndarray] | None = None,
            reading: Reading | None = None, deadline: Deadline = NO_DEADLINE) -> Figures:
    """Run the .tflite model on every example (gaps fed as the model's fills, see
    common.tflite.feeding) and, if timing is given, time it; see :func:`measure`."""
    return measure(mode, content, signature, examples, reference, timing, fills, reading,
                   deadline)[0]


def measure(mode: str, content: bytes, signature: str, examples: Examples,
            reference: Dict[str, np.ndarray], timing: Timing | None = None,
            fills: Dict[str, np.ndarray] | None = None, reading: Reading | None = None,
            deadline: Deadline = NO_DEADLINE) -> Tuple[Figures, Dict[str, np.ndarray]]:
    """:func:`compare`, with the .tflite model's outputs on the examples beside the figures.

    Before ``deadline``, the examples are run in chunks that each would end in time and
    the calls timed are those that would; what the deadline stops is said in the figures'
    ``cut_short``, which are then those of the examples and calls measured. OutOfTime when
    not one example could be run in time.
    """
    reading = reading or Reading()
    interpreter = litert.load_interpreter(content, timing.num_threads if timing else 0)
    runner = litert.signature_runner(interpreter, signature)
    got, per_row = _evaluate(runner, examples, fills, deadline)
    done, cut = len(next(iter(got.values()))), ""
    if done < len(examples):
        cut = f"evaluated {done} of {len(examples)} examples before {deadline.describe()} ran out"
        examples = Examples({k: v[:done] for k, v in examples.features.items()},
                            None if examples.labels is None else examples.labels[:done],
                            examples.batch)
        reference = {k: v[:done] for k, v in reference.items()}
    figures = dict(mode=mode, size_bytes=len(content), examples=len(examples),
                   **outputs_figures(got, reference, reading, examples.labels))
    if timing is not None and not cut:  # a cut evaluation leaves no time to time it
        timed, cut = latencies(runner, examples, timing, fills, deadline, per_row)
        figures.update(timed)
    return Figures(**figures, cut_short=cut), got


def _evaluate(runner, examples: Examples, fills, deadline: Deadline):
    """(outputs on the examples run before the deadline, seconds per row): every example in
    one pass without a deadline, else in chunks that each would end in time."""
    if not deadline.bounded:
        return litert.run(runner, examples.features, fills=fills,
                          fixed_batch=examples.batch), 0.0
    parts, done, started = [], 0, time.perf_counter()
    for size in budget.chunk_sizes(len(examples), examples.batch or 1, deadline):
        rows = {k: v[done:done + size] for k, v in examples.features.items()}
        parts.append(litert.run(runner, rows, size, fills, examples.batch))
        done += size
    if not parts:
        raise OutOfTime(f"not one of {len(examples)} examples was evaluated before "
                        f"{deadline.describe()} ran out")
    per_row = (time.perf_counter() - started) / done
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, per_row


def outputs_figures(got: Dict[str, np.ndarray], reference: Dict[str, np.ndarray],
                    reading: Reading, labels: np.ndarray | None) -> Dict[str, float | None]:
    """Agreement, accuracies, differences and relative error of got against reference."""
    missing = sorted(set(reference) - set(got))
    if missing:
        raise litert.LiteRTError(f"the converted model lacks outputs {missing} of the "
                                 f"SavedModel; it has {sorted(got)}")
    floats = [n for n in sorted(reference) if np.asarray(reference[n]).dtype.kind == "f"]
    compared = [reading.scores] if reading.scores else floats
    diff = np.concatenate([np.abs(got[n].astype(np.float64) - reference[n]).reshape(-1)
                           for n in compared]) if compared else np.zeros(1)
    out = dict(max_abs_diff=float(diff.max()), mean_abs_diff=float(diff.mean()),
               **_constancy(got, reference, compared or sorted(reference)),
               relative_error=max((_relative(got[n], reference[n]) for n in floats),
                                  default=0.0),
               accuracy=None, reference_accuracy=None, agreement=None, rmse=None,
               reference_rmse=None)
    if reading.values and labels is not None:
        out["rmse"] = _rmse(got[reading.values], labels)
        out["reference_rmse"] = _rmse(reference[reading.values], labels)
    if reading.scores:
        top, ref_top = _top1(got, reading), _top1(reference, reading)
        out["agreement"] = float(np.mean(top == ref_top))
        if reading.accuracy and labels is not None:
            out["accuracy"] = _accuracy(top, labels)
            out["reference_accuracy"] = _accuracy(ref_top, labels)
    return out


def _constancy(got: Dict[str, np.ndarray], reference: Dict[str, np.ndarray],
               names: List[str]) -> Dict:
    """``constant``: ``names`` when each of those outputs is the same for every example
    (one example proves nothing: then empty); ``reference_constant``: the same of the
    SavedModel's."""
    def constant(outputs):
        arrays = [np.asarray(outputs[n]) for n in names]
        return len(arrays[0]) > 1 and all(np.all(a == a[:1]) for a in arrays)

    return dict(constant=tuple(names) if constant(got) else (),
                reference_constant=bool(constant(reference)))


def _top1(outputs: Dict[str, np.ndarray], reading: Reading) -> np.ndarray:
    if reading.class_ids:
        return outputs[reading.class_ids]
    return np.argmax(outputs[reading.scores], axis=-1)


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    error = np.linalg.norm(got.astype(np.float64) - want)
    return float(error / max(np.linalg.norm(want), 1e-12))


def _rmse(values: np.ndarray, labels: np.ndarray) -> float:
    error = np.asarray(values, np.float64).reshape(-1) - np.asarray(labels, np.float64)
    return float(np.sqrt(np.mean(error ** 2)))


def _accuracy(class_ids: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(class_ids.astype(np.int64) == labels.astype(np.int64)))


class QualityGateError(ValueError):
    """The converted model is not good enough; the message gives the figures and limits."""


def failures(figures: Figures, gate: Gate) -> List[str]:
    """Why the figures fail the gate (empty: they pass)."""
    f, out = figures, []
    if f.constant:
        out.append(_constant_failure(f))
    if f.accuracy is not None and f.accuracy_drop > gate.max_accuracy_drop:
        out.append(f"accuracy {f.accuracy:.4f} vs {f.reference_accuracy:.4f} for the "
                   f"SavedModel on {f.examples} examples, a drop of "
                   f"{100 * f.accuracy_drop:.2f} points, above max_accuracy_drop "
                   f"{100 * gate.max_accuracy_drop:.2f} points")
    elif f.accuracy is None and f.agreement is not None and \
            f.shortfall > gate.max_accuracy_drop:
        out.append(f"top-1 agreement {f.agreement:.4f} on {f.examples} examples (no labels "
                   f"for the scores): {100 * f.shortfall:.2f} points changed their top class, "
                   f"above max_accuracy_drop {100 * gate.max_accuracy_drop:.2f} points")
    elif f.rmse is not None:
        if f.rmse_increase > gate.max_rmse_increase:
            out.append(f"RMSE {f.rmse:.4g} vs {f.reference_rmse:.4g} for the SavedModel on "
                       f"{f.examples} examples, {100 * f.rmse_increase:.2f}% higher, above "
                       f"max_rmse_increase {100 * gate.max_rmse_increase:.2f}%")
    elif f.agreement is None and f.relative_error > gate.max_relative_error:
        out.append(f"relative error {f.relative_error:.4f} vs the SavedModel on "
                   f"{f.examples} examples, above max_relative_error "
                   f"{gate.max_relative_error:.4f}")
    if f.agreement is not None and f.agreement < gate.min_agreement:
        out.append(f"top-1 agreement with the SavedModel {f.agreement:.4f} on {f.examples} "
                   f"examples is below min_agreement {gate.min_agreement:.4f}")
    return out


def _constant_failure(f: Figures) -> str:
    outputs = ", ".join(f.constant)
    why = ("the SavedModel's are constant too: the model answers the same whatever it is fed "
           "(untrained, or its inputs do not reach its outputs)" if f.reference_constant else
           f"the SavedModel's vary: {f.mode} collapsed them (as int8 does to a model with "
           "random weights); try another mode or check the model is trained")
    return (f"outputs {outputs} are the same for all {f.examples} examples, so the model "
            f"tells its inputs apart no more than a constant would; {why}")


def check(figures: Figures, gate: Gate, what: str) -> None:
    """Raise QualityGateError naming every failure and the figures."""
    found = failures(figures, gate)
    if found:
        raise QualityGateError(f"{what}: {'; '.join(found)} ({figures.summary()})")

