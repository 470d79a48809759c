"""Freeze a tfkfp SavedModel and quantize it to TFLite, measuring every mode tried.

The SavedModel's ``serving_raw`` signature (one tensor per feature column, strings included)
is frozen into an optimised inference GraphDef, checked against the SavedModel, and
converted to TFLite (lookup tables as TFLite hash-table builtins) in the
requested mode, or in every mode for ``auto``. Each converted model is run in LiteRT on the
eval split: size, accuracy, top-1 agreement with the SavedModel, output difference and
latency; gaps (NaN) are fed as the model's fills (common.tflite_feeding), recorded per input
in quantization.json. ``auto`` keeps the smallest model whose accuracy drop is within
``max_accuracy_drop``; an explicit mode must meet it too. Outputs are written under staging
names and renamed into place: a failed run writes nothing.
"""

import dataclasses
import logging
import time
from typing import Dict, List

from tfkfp.components.common import (
    savedmodel,
    tflite_convert,
    tflite_feeding,
    tflite_inputs,
    tflite_parity,
    uris,
)
from tfkfp.components.common.cpus import tensorflow_threads
from tfkfp.components.common.tflite_inputs import QuantizeInputError
from tfkfp.components.common.tflite_parity import Figures, QualityGateError, Timing
from tfkfp.components.freeze_quantize import artifact, freeze, report

log = logging.getLogger("tfkfp.freeze_quantize")

MODES = (*tflite_convert.MODES, "auto")


@dataclasses.dataclass(frozen=True)
class FreezeQuantizeResult:
    mode: str  # the mode chosen (auto) or asked for
    signature: str
    figures: List[Figures]  # every mode tried, in MODES order
    frozen: Dict  # frozen graph spec: tensor names, node counts, sizes, op histograms
    frozen_agreement: float
    frozen_max_abs_diff: float
    tflite_dir: str
    frozen_dir: str
    seconds: float

    @property
    def chosen(self) -> Figures:
        return next(f for f in self.figures if f.mode == self.mode)

    @property
    def float_size(self) -> int | None:
        return next((f.size_bytes for f in self.figures if f.mode == "none"), None)

    def metadata(self) -> Dict:
        return {"mode": self.mode, "signature": self.signature, **self.chosen.to_dict(),
                "modes": {f.mode: f.to_dict() for f in self.figures}}

    def frozen_metadata(self) -> Dict:
        return {"nodes_before": self.frozen["nodes"]["before"],
                "nodes_after": self.frozen["nodes"]["after"],
                "bytes_before": self.frozen["bytes"]["before"],
                "bytes_after": self.frozen["bytes"]["after"],
                "agreement": self.frozen_agreement, "max_abs_diff": self.frozen_max_abs_diff,
                "inputs": self.frozen["inputs"], "outputs": self.frozen["outputs"]}

    def metrics(self) -> Dict[str, float]:
        out = {"frozen_nodes_before": self.frozen["nodes"]["before"],
               "frozen_nodes_after": self.frozen["nodes"]["after"],
               "frozen_max_abs_diff": self.frozen_max_abs_diff}
        for f in self.figures:
            out.update({f"{f.mode}_size_bytes": f.size_bytes, f"{f.mode}_accuracy": f.accuracy,
                        f"{f.mode}_accuracy_drop": f.accuracy_drop,
                        f"{f.mode}_agreement": f.agreement})
            if f.latency_batch_ms is not None:
                out[f"{f.mode}_latency_ms_example"] = f.latency_example_ms
                out[f"{f.mode}_latency_ms_batch"] = f.latency_batch_ms
        return {k: float(v) for k, v in out.items()}

    def markdown(self) -> str:
        return "\n".join([
            f"## freeze_quantize: chose `{self.mode}`", "",
            f"Signature `{self.signature}`, {self.chosen.examples} eval examples, "
            f"{self.seconds:.1f}s.", "",
            report.mode_table(self.figures, self.mode, self.float_size), "",
            "### Frozen graph", "",
            report.freeze_table(self.frozen, self.frozen_max_abs_diff, self.frozen_agreement),
            ""])


def freeze_quantize(
    model_dir: str,
    dataset: str,
    tflite_dir: str,
    frozen_dir: str,
    quantization: str = "auto",
    max_accuracy_drop: float = 0.01,
    signature: str = savedmodel.SIGNATURE_RAW,
    calibration_examples: int = 300,
    eval_examples: int = 1000,
    calibration_split: str = "train",
    eval_split: str = "eval",
    integer_io: bool = False,
    select_tf_ops: bool = False,
    timing: Timing | None = None,
) -> FreezeQuantizeResult:
    """Freeze, quantize and measure; see the module docstring.

    Args:
        model_dir: a tfkfp SavedModel (from train or export_model).
        dataset: a Dataset directory from shard_tfrecords whose features match the model.
        tflite_dir: output folder: ``model.tflite`` and ``quantization.json``.
        frozen_dir: output folder: ``frozen_graph.pb`` and ``frozen_graph.json``.
        quantization: none, dynamic, float16, int8, int16x8 or auto.
        max_accuracy_drop: largest accepted accuracy drop vs the SavedModel, as a fraction
            (0.01 is one point).
        signature: the signature to freeze and convert.
        calibration_examples: representative examples for int8/int16x8 (from
            calibration_split).
        eval_examples: examples of eval_split every mode is measured on.
        integer_io: int8: float inputs and outputs become int8 as well.
        select_tf_ops: allow TensorFlow (Flex) ops with no TFLite builtin.
        timing: latency settings (batch size, timed runs, threads); None: default Timing.
    """
    started = time.monotonic()
    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    check_options(quantization, calibration_examples, eval_examples)
    loaded, fn = tflite_inputs.load_signature(model_dir, signature)
    schema = tflite_inputs.dataset_schema(dataset)
    tflite_inputs.check_schema(fn, signature, schema, f"dataset {dataset}")
    names = sorted(tflite_inputs.signature_inputs(fn))
    examples = tflite_inputs.load_examples(dataset, eval_split, eval_examples, names,
                                           "evaluation")
    modes = list(tflite_convert.MODES) if quantization == "auto" else [quantization]
    calibration = None
    if set(modes) & set(tflite_convert.CALIBRATED):
        calibration = tflite_inputs.load_examples(dataset, calibration_split,
                                                  calibration_examples, names, "calibration")
    reference = tflite_inputs.reference_outputs(fn, examples)
    prepared = tflite_convert.prepare(fn)
    frozen = freeze.freeze(loaded, fn, prepared.frozen)
    frozen_out = freeze.run_graph(frozen.graph_def, frozen.inputs, frozen.outputs, examples)
    contents, figures = {}, []
    with tflite_convert.convertible(model_dir, signature, fn, prepared) as source:
        for m in modes:
            contents[m], measured = _convert_and_measure(
                model_dir, source, signature, m, calibration, integer_io, select_tf_ops,
                examples, reference, timing or Timing(), prepared.feeding.fills)
            figures.append(measured)
    chosen = _choose(figures, quantization, max_accuracy_drop)
    result = FreezeQuantizeResult(
        mode=chosen.mode, signature=signature, figures=figures, frozen=frozen.spec(),
        frozen_agreement=_agreement(frozen_out, reference),
        frozen_max_abs_diff=_max_diff(frozen_out, reference), tflite_dir=tflite_dir,
        frozen_dir=frozen_dir, seconds=time.monotonic() - started)
    uris.publish_dir(frozen.files(), frozen_dir)
    options = {"integer_io": integer_io, "select_tf_ops": select_tf_ops,
               "fills": {k: tflite_feeding.to_json(v)
                         for k, v in sorted(prepared.feeding.fills.items())}}
    artifact.write(tflite_dir, contents[chosen.mode], {**result.metadata(), **options})
    log.info("chose %s: %d bytes, accuracy %.4f (drop %.2f points)", chosen.mode,
             chosen.size_bytes, chosen.accuracy, 100 * chosen.accuracy_drop)
    return result


def check_options(quantization: str, calibration_examples: int, eval_examples: int) -> None:
    """Refuse what cannot work before any work; the pipelines call it before a run starts."""
    if quantization not in MODES:
        raise QuantizeInputError(f"quantization {quantization!r} is not one of {', '.join(MODES)}")
    if calibration_examples < 1:
        raise QuantizeInputError(f"calibration_examples {calibration_examples}: the "
                                 "calibration set would be empty; expected e.g. 100-500")
    if eval_examples < 1:
        raise QuantizeInputError(f"eval_examples {eval_examples} is below 1")


def _convert_and_measure(model_dir, source, signature, mode, calibration, integer_io,
                         select_tf_ops, examples, reference, timing, fills):
    started = time.monotonic()
    representative = (tflite_convert.representative_dataset(calibration.features, fills)
                      if mode in tflite_convert.CALIBRATED else None)
    content = tflite_convert.convert(model_dir, signature, mode, representative,
                                     integer_io=integer_io, select_tf_ops=select_tf_ops,
                                     source=source)
    figures = tflite_parity.compare(mode, content, signature, examples, reference, timing,
                                    fills)
    log.info("%s: %d bytes, accuracy %.4f, agreement %.4f (%.1fs)", mode, len(content),
             figures.accuracy, figures.agreement, time.monotonic() - started)
    return content, figures


def _choose(figures: List[Figures], quantization: str, max_accuracy_drop: float) -> Figures:
    if quantization != "auto":
        tflite_parity.check_drop(figures[0], max_accuracy_drop, f"quantization {quantization!r}")
        return figures[0]
    within = [f for f in figures if f.accuracy_drop <= max_accuracy_drop]
    if not within:
        tried = ", ".join(f"{f.mode} {100 * f.accuracy_drop:+.2f}" for f in figures)
        raise QualityGateError(f"auto: no mode keeps the accuracy drop within "
                               f"{100 * max_accuracy_drop:.2f} points (drops in points: "
                               f"{tried})")
    return min(within, key=lambda f: (f.size_bytes, f.accuracy_drop))


def _agreement(got: Dict, reference: Dict) -> float:
    return float((got["class_ids"] == reference["class_ids"]).mean())


def _max_diff(got: Dict, reference: Dict) -> float:
    return float(abs(got["probabilities"] - reference["probabilities"]).max())
