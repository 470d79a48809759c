"""Measuring a converted model in LiteRT against the SavedModel it came from, and the
accuracy gate freeze_quantize and export_tflite apply to the figures."""

import dataclasses
from typing import Dict, Tuple

import numpy as np

from tfkfp.components.common import litert
from tfkfp.components.common.tflite_inputs import Examples


@dataclasses.dataclass(frozen=True)
class Figures:
    """One converted model measured on the evaluation examples."""

    mode: str
    size_bytes: int
    accuracy: float  # of the converted model
    reference_accuracy: float  # of the SavedModel, same examples
    agreement: float  # share of examples with the same top-1 class as the SavedModel
    max_abs_diff: float  # of the probabilities
    mean_abs_diff: float
    examples: int
    latency_example_ms: float | None = None
    latency_batch_ms: float | None = None
    batch_size: int | None = None

    @property
    def accuracy_drop(self) -> float:
        return round(self.reference_accuracy - self.accuracy, 9)  # 0.96 - 0.95 is not 0.01

    def to_dict(self) -> Dict:
        out = dataclasses.asdict(self)
        out["accuracy_drop"] = self.accuracy_drop
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in out.items()}


@dataclasses.dataclass(frozen=True)
class Timing:
    batch_size: int = 256
    runs: int = 20  # calls timed per figure (median)
    num_threads: int = 0


def compare(mode: str, content: bytes, signature: str, examples: Examples,
            reference: Dict[str, np.ndarray], timing: Timing | None = None,
            fills: Dict[str, np.ndarray] | None = None) -> Figures:
    """Run the .tflite model on every example (gaps fed as the model's fills, see
    common.tflite_feeding) and, if timing is given, time it."""
    return measure(mode, content, signature, examples, reference, timing, fills)[0]


def measure(mode: str, content: bytes, signature: str, examples: Examples,
            reference: Dict[str, np.ndarray], timing: Timing | None = None,
            fills: Dict[str, np.ndarray] | None = None
            ) -> Tuple[Figures, Dict[str, np.ndarray]]:
    """:func:`compare`, with the .tflite model's outputs on the examples beside the figures."""
    interpreter = litert.load_interpreter(content, timing.num_threads if timing else 0)
    runner = litert.signature_runner(interpreter, signature)
    got = litert.run(runner, examples.features, fills=fills)
    probs, ref_probs = got["probabilities"], reference["probabilities"]
    diff = np.abs(probs.astype(np.float64) - ref_probs)
    figures = dict(
        mode=mode, size_bytes=len(content),
        accuracy=_accuracy(got["class_ids"], examples.labels),
        reference_accuracy=_accuracy(reference["class_ids"], examples.labels),
        agreement=float(np.mean(got["class_ids"] == reference["class_ids"])),
        max_abs_diff=float(diff.max()), mean_abs_diff=float(diff.mean()),
        examples=len(examples))
    if timing is not None:
        batch = min(timing.batch_size, len(examples))
        figures.update(
            latency_example_ms=1000 * litert.latency(runner, examples.features, 1,
                                                     timing.runs * 5, fills),
            latency_batch_ms=1000 * litert.latency(runner, examples.features, batch,
                                                   timing.runs, fills),
            batch_size=batch)
    return Figures(**figures), got


def _accuracy(class_ids: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(class_ids.astype(np.int64) == labels.astype(np.int64)))


class QualityGateError(ValueError):
    """The converted model is not good enough; the message gives the figures and limits."""


def check_drop(figures: Figures, max_accuracy_drop: float, what: str) -> None:
    if figures.accuracy_drop > max_accuracy_drop:
        raise QualityGateError(
            f"{what}: accuracy {figures.accuracy:.4f} vs {figures.reference_accuracy:.4f} for "
            f"the SavedModel on {figures.examples} examples, a drop of "
            f"{100 * figures.accuracy_drop:.2f} points, above max_accuracy_drop "
            f"{100 * max_accuracy_drop:.2f} points (agreement {figures.agreement:.4f}, max abs "
            f"diff {figures.max_abs_diff:.2e})")
