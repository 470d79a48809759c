"""Export a SavedModel as a deployable TFLite bundle, validated in LiteRT.

Any SavedModel: its signature is bound to the Dataset's columns as in freeze_quantize
(common.tflite.binding), a misfit refused before any conversion. The model is converted in
an explicit quantization mode (common.tflite.modes), or, for ``auto``, taken as converted
and chosen by freeze_quantize (its ``model.tflite`` and ``quantization.json``,
common.tflite.quantized): here ``auto`` converts nothing and sweeps nothing, where
freeze_quantize's sweeps the modes. It is then run in LiteRT, the runtime the app
ships, on held-out examples next to the SavedModel in TensorFlow: on class scores top-1
agreement and, with labels, the accuracy of both (a regressor's value: the RMSE of both); the
relative error and max and mean absolute difference of the outputs. A gate
(``max_accuracy_drop``, ``min_agreement``, ``max_rmse_increase``, ``max_relative_error``;
common.tflite.parity) fails the export with the figures when the model is not good enough;
the bundle (``model.tflite``, ``labels.txt`` when there are class
names, ``signature.json``, ``validation.json``) is only written when it passes. ``signature.json``
says how each input is fed: string inputs as raw UTF-8 (the model holds its vocabulary), and
what to feed for a gap (common.tflite.feeding). The same facts, with the class names, are
inside ``model.tflite`` as its ``tfkfp.app.json`` metadata (common.tflite.metadata), and the
gate runs that file, the one the app ships, through both of LiteRT's APIs: the classic
``Interpreter`` and the ``CompiledModel`` API (common.tflite.compiled; a model with string
or int64 inputs, which its buffers cannot hold, by the Interpreter alone), each held to the
same gate; the report says which runtime checked what.
"""

import dataclasses
import logging
import time
from typing import Dict

from tfkfp.components.common.charts import classes
from tfkfp.components.common.charts import regression as regression_charts
from tfkfp.components.common.charts import scores as score_curves
from tfkfp.components.common.model import classification, regression, savedmodel
from tfkfp.components.common.model.bundle import Bundle
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import tensorflow_threads
from tfkfp.components.common.tflite import binding as tflite_binding
from tfkfp.components.common.tflite import compiled as tflite_compiled
from tfkfp.components.common.tflite import convert as tflite_convert
from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import metadata as tflite_metadata
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite import packing as tflite_packing
from tfkfp.components.common.tflite import parity as tflite_parity
from tfkfp.components.common.tflite import quantized
from tfkfp.components.common.tflite.compiled import CompiledCheck
from tfkfp.components.common.tflite.options import QuantizeInputError
from tfkfp.components.common.tflite.parity import Figures, Gate, QualityGateError
from tfkfp.components.export_tflite import bundle
from tfkfp.components.export_tflite.options import ExportOptions

log = logging.getLogger("tfkfp.export_tflite")


@dataclasses.dataclass(frozen=True)
class ExportResult:
    output_dir: str
    mode: str
    source: str  # "converted" here, or the freeze_quantize folder the model came from
    figures: Figures
    signature: Dict
    max_accuracy_drop: float
    min_agreement: float
    seconds: float
    max_relative_error: float = 0.05
    classification: Dict | None = None  # the TFLite model's confusion matrix (and ROC curve)
    max_rmse_increase: float = 0.05
    regression: Dict | None = None  # a regressor's predicted and actual values (TFLite)
    compiled: CompiledCheck = CompiledCheck(skipped="not run")  # CompiledModel's share

    def metadata(self) -> Dict:
        return {"mode": self.mode, "source": self.source, **self.figures.to_dict(),
                "compiled_model": self.compiled.to_dict(),
                "inputs": sorted(self.signature["inputs"]),
                "outputs": sorted(self.signature["outputs"]),
                "gate": {"max_accuracy_drop": self.max_accuracy_drop,
                         "min_agreement": self.min_agreement,
                         "max_relative_error": self.max_relative_error,
                         "max_rmse_increase": self.max_rmse_increase}}

    def metrics(self) -> Dict[str, float]:
        f = self.figures
        out = {"size_bytes": f.size_bytes, "accuracy": f.accuracy,
               "savedmodel_accuracy": f.reference_accuracy, "accuracy_drop": f.accuracy_drop,
               "agreement": f.agreement, "relative_error": f.relative_error,
               "max_abs_diff": f.max_abs_diff, "mean_abs_diff": f.mean_abs_diff,
               "examples": f.examples, "rmse": f.rmse, "savedmodel_rmse": f.reference_rmse,
               "rmse_increase": f.rmse_increase}
        return {k: float(v) for k, v in out.items() if v is not None}

    def markdown(self) -> str:
        f = self.figures
        rows = [("mode", self.mode), ("size", f"{f.size_bytes:,} bytes"),
                ("validated on", f"{f.examples} examples, in LiteRT")]
        if f.accuracy is not None:
            rows += [("accuracy (TFLite / SavedModel)",
                      f"{f.accuracy:.4f} / {f.reference_accuracy:.4f}"),
                     ("accuracy drop", f"{100 * f.accuracy_drop:+.2f} points (max "
                                       f"{100 * self.max_accuracy_drop:.2f})")]
        if f.agreement is not None:
            rows.append(("top-1 agreement", f"{f.agreement:.4f} (min {self.min_agreement:.4f})"))
        if f.rmse is not None:
            rows += [("RMSE (TFLite / SavedModel)", f"{f.rmse:.4g} / {f.reference_rmse:.4g}"),
                     ("RMSE increase", f"{100 * f.rmse_increase:+.2f}% (max "
                                       f"{100 * self.max_rmse_increase:.2f}%)")]
        rows += [("relative error", f"{f.relative_error:.2e} (max {self.max_relative_error:g} "
                                    "where the outputs are neither class scores nor a "
                                    "regressor's value)"),
                 ("max / mean abs difference", f"{f.max_abs_diff:.2e} / {f.mean_abs_diff:.2e}"),
                 ("runtimes", self.compiled.summary().replace("|", "/")),
                 ("inputs", _names(self.signature["inputs"]))]
        lines = ["## export_tflite: gate passed", "", "| | |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in rows]
        if self.regression:
            lines += ["", regression.markdown(self.regression, "validation, TFLite model")]
        return "\n".join(lines) + "\n"

    def charts(self):
        """The TFLite model's plots on the validation examples, for the step's HTML page: a
        regressor's two, a classifier's matrix, table and per-class curves; none without
        labels (then the page is empty rather than saying so)."""
        what = "validation, TFLite model"
        if self.regression:
            return regression_charts.sections(self.regression, what)
        return classes.sections(self.classification, what) if self.classification else []


def _names(items, shown: int = 8) -> str:
    names = sorted(items)
    text = ", ".join(f"`{n}`" for n in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


def export_tflite(model_dir: str, dataset: str, output_dir: str,
                  options: ExportOptions | None = None, **settings) -> ExportResult:
    """Convert (or take), validate, gate and write the bundle; see the module docstring.

    Args:
        model_dir: the SavedModel (tfkfp's, or any other).
        dataset: a Dataset directory from shard_tfrecords, for validation (and calibration
            when converting in int8/int16x8).
        output_dir: the bundle folder to write.
        options: how to export (options.ExportOptions: every setting, its default, choices
            and meaning); or give its settings as keywords, e.g. ``quantization="int8"``.
            Its quantization is a mode of common.tflite.modes.MODES to convert here, or
            auto (the default): convert nothing here, export the model of its
            quantized_dir (a tflite folder written by freeze_quantize) in the mode
            freeze_quantize chose (no sweep). Its input_layout packed: the model takes its
            scalar float columns as one float32 [batch, n] input and its whole-number
            columns as one int32 [batch, n] input, other inputs (strings, images) as their
            own, the column order in the bundle (common.tflite.packing); columns: one input
            per column. With quantized_dir, the layout freeze_quantize converted in, which
            input_layout must name.
    """
    started = time.monotonic()
    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    options = ExportOptions.given(options, settings)
    mapping = tflite_binding.parse_mapping(options.input_mapping)
    loaded, fn, signature = tflite_inputs.load_model(model_dir, options.signature)  # owns tables
    schema = tflite_inputs.dataset_schema(dataset)
    binding = tflite_binding.bind(fn, signature, schema, f"dataset {dataset}", mapping)
    prepared = tflite_convert.prepare(fn)
    fills = prepared.feeding.fills
    mode = options.quantization
    if options.quantized_dir:
        content, mode, packing = _quantized(options.quantized_dir, signature,
                                            options.input_layout)
        source = options.quantized_dir
    else:
        packing = tflite_packing.for_binding(fn, binding, schema, options.input_layout)
        with tflite_convert.convertible(model_dir, signature, fn, prepared, packing) as converted:
            content = _convert(model_dir, converted, dataset, signature, mode, binding,
                               options, fills, packing)
        source = "converted"
    labels = bundle.labels_for(model_dir, schema, binding.reading)
    model_schema = _model_schema(model_dir, schema)
    sig = bundle.signature_json(content, signature, model_schema, labels, mode,
                                prepared.feeding, binding, savedmodel.recorded_task(model_dir),
                                packing)
    # the file the app ships, its metadata inside, is the one the gate runs
    content = tflite_metadata.embed(content, bundle.app_metadata(sig, labels))
    examples = tflite_inputs.load_examples(dataset, options.eval_split, options.eval_examples,
                                           binding, "validation")
    reference = tflite_inputs.reference_outputs(fn, examples)
    figures, outputs, compiled = _gate(
        mode, content, signature, tflite_packing.pack_examples(packing, examples), reference,
        packing.fills(fills), binding.reading,
        Gate(options.max_accuracy_drop, options.max_relative_error, options.min_agreement,
             options.max_rmse_increase),
        f"export gate ({mode}) of model {model_dir}")
    result = ExportResult(output_dir, mode, source, figures, sig, options.max_accuracy_drop,
                          options.min_agreement, time.monotonic() - started,
                          options.max_relative_error,
                          _classification(examples, outputs, binding.reading, labels),
                          options.max_rmse_increase,
                          _regression(examples, outputs, binding.reading), compiled)
    validation = {**result.metadata(), "seconds": round(result.seconds, 2)}
    Bundle.write(output_dir, content, sig, validation, labels, model_schema)
    log.info("exported %s (%s): %s", output_dir, mode, figures.summary())
    return result


def _gate(mode: str, content: bytes, signature: str, examples, reference: Dict, fills: Dict,
          reading, gate: Gate, what: str):
    """(figures, outputs, CompiledCheck): the model measured in LiteRT's Interpreter, then
    through its CompiledModel API, each held to the gate."""
    figures, outputs = tflite_parity.measure(mode, content, signature, examples,
                                             reference, fills=fills, reading=reading)
    tflite_parity.check(figures, gate, what)
    compiled = tflite_compiled.check(content, signature, examples, reference, outputs, fills,
                                     reading)
    refused = tflite_compiled.failures(compiled, gate)
    if refused:
        raise QualityGateError(f"{what}: {'; '.join(refused)} ({compiled.figures.summary()})")
    log.info("runtimes: %s", compiled.summary())
    return figures, outputs, compiled


def _model_schema(model_dir: str, dataset_schema):
    """The schema a tfkfp model carries, else the Dataset's."""
    if uris.exists(uris.join(model_dir, "assets", savedmodel.SCHEMA_FILE)):
        return savedmodel.load_schema(model_dir)
    return dataset_schema


def _classification(examples, outputs: Dict, reading, labels) -> Dict | None:
    """The TFLite model's confusion matrix (and ROC curve) on the validation examples, where
    its output is class scores that the Dataset's labels index."""
    if not (reading.scores and reading.accuracy and labels) or examples.labels is None:
        return None
    scores = outputs[reading.scores]
    return {**classification.summarise(examples.labels, scores, labels),
            "curves": score_curves.summarise(examples.labels, scores, labels)}


def _regression(examples, outputs: Dict, reading) -> Dict | None:
    """The TFLite regressor's predicted against actual values on the validation examples."""
    if not reading.values or examples.labels is None:
        return None
    return regression.summarise(examples.labels.astype("float64"),
                                outputs[reading.values].reshape(-1).astype("float64"))


def _quantized(quantized_dir: str, signature: str, input_layout: str):
    """(content, mode, packing) of freeze_quantize's folder, whose layout must be the one
    asked for."""
    content, mode, layout, packing = quantized.read(quantized_dir, signature)
    if layout != input_layout:
        raise QuantizeInputError(
            f"quantized_dir {quantized_dir} holds a model converted with input_layout "
            f"{layout!r}, not {input_layout!r}: pass input_layout={layout!r}, or run "
            f"freeze_quantize with input_layout={input_layout!r}")
    return content, mode, packing


def _convert(model_dir, converted, dataset, signature, mode, binding,
             options: ExportOptions, fills, packing) -> bytes:
    representative = None
    if tflite_modes.get(mode).calibrated:
        calibration = tflite_inputs.load_examples(dataset, "train", options.calibration_examples,
                                                  binding, "calibration")
        representative = tflite_convert.representative_dataset(
            packing.feed(calibration.features), packing.fills(fills), calibration.batch)
    return tflite_convert.convert(model_dir, signature, mode, representative,
                                  integer_io=options.integer_io,
                                  select_tf_ops=options.select_tf_ops,
                                  source=converted, packed=bool(packing))
