"""Freeze a SavedModel and quantize it to TFLite, measuring every mode tried.

A signature of any SavedModel (tfkfp's ``serving_raw`` by default, else ``serving_default``)
is bound to the Dataset's columns (common.tflite.binding: by name, the single image or
feature column, or ``input_mapping``), a misfit refused before any work. It is frozen into an
optimised inference GraphDef, checked against the SavedModel, and converted to TFLite
(lookup tables as TFLite hash-table builtins) in the requested mode, or for ``auto`` in the
modes of ``modes`` (by default those worth their time for the model's kind, e.g. no int16x8
for a CNN: common.tflite.modes.default_sweep), in the table's order: here ``auto`` means
sweep, where export_tflite's means take this step's choice. Each converted model is run in
LiteRT on the eval split: size, accuracy and top-1 agreement on class scores, relative
error, output difference and latency (timed for a bounded time, common.tflite.latency);
gaps (NaN) are fed as the model's fills (common.tflite.feeding), recorded per input in
quantization.json (common.tflite.quantized).

``sweep_seconds`` bounds the whole sweep from its first conversion, the mode in progress
included (common.tflite.budget): a mode is not started when the deadline has passed or its
conversion, which cannot be interrupted, would not end before it (judged by the longest
conversion so far); a mode whose evaluation or latency would pass it stops there and is
reported as cut short, with the figures measured by then. ``auto`` skips a mode that fails
to convert or to run in LiteRT, is left out of the default sweep, or is not started (saying
why in its table, with each mode's seconds), and keeps the smallest model that passes the
gate (common.tflite.parity, which refuses outputs that are the same for every example) among
the modes measured in full; an explicit mode must convert and pass it too, without a
budget. Outputs are written under staging names and renamed into
place: a failed run writes nothing.
"""

import dataclasses
import logging
import time
from typing import Dict, Sequence, Tuple

from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import tensorflow_threads
from tfkfp.components.common.tflite import binding as tflite_binding
from tfkfp.components.common.tflite import convert as tflite_convert
from tfkfp.components.common.tflite import feeding as tflite_feeding
from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite import packing as tflite_packing
from tfkfp.components.common.tflite import parity as tflite_parity
from tfkfp.components.common.tflite import quantized
from tfkfp.components.common.tflite.budget import Deadline, OutOfTime
from tfkfp.components.common.tflite.convert import ConversionError
from tfkfp.components.common.tflite.litert import LiteRTError
from tfkfp.components.common.tflite.parity import Gate, Reading, Timing
from tfkfp.components.freeze_quantize import freeze
from tfkfp.components.freeze_quantize.choice import choose
from tfkfp.components.freeze_quantize.options import LATENCY, QuantizeOptions
from tfkfp.components.freeze_quantize.result import FreezeQuantizeResult

log = logging.getLogger("tfkfp.freeze_quantize")

# what makes auto skip a mode: the converter refuses it, or LiteRT cannot load or run it
# (e.g. int16x8 MobileNetV2: "DEPTHWISE_CONV_2D failed to prepare", a RuntimeError)
CONVERSION_FAILURES = (ConversionError, LiteRTError, RuntimeError)


def freeze_quantize(model_dir: str, dataset: str, tflite_dir: str, frozen_dir: str,
                    options: QuantizeOptions | None = None, *, timing: Timing | None = None,
                    **settings) -> FreezeQuantizeResult:
    """Freeze, quantize and measure; see the module docstring.

    Args:
        model_dir: a SavedModel (from train or export_model, or any tf.saved_model.save,
            tf_keras or Keras 3 ``model.export()`` directory).
        dataset: a Dataset directory from shard_tfrecords whose columns feed the signature.
        tflite_dir: output folder: ``model.tflite`` and ``quantization.json``.
        frozen_dir: output folder: ``frozen_graph.pb`` and ``frozen_graph.json``.
        options: how to quantize (options.QuantizeOptions: every setting, its default,
            choices and meaning); or give its settings as keywords, e.g.
            ``quantization="int8"``. Its quantization is a mode of common.tflite.modes.MODES,
            or auto: sweep, i.e. convert and measure every mode of its ``modes`` (empty:
            those worth their time for the model's kind, every mode but int16x8 for a model
            with convolutions, whose int16x8 kernels are slow reference ones), skip one that
            fails to convert or run in LiteRT, keep the smallest that passes the gate, all
            within its ``sweep_seconds`` (a mode that would not end within it is not
            started, or cut short and not chosen, and named in the report; 0: no budget).
            Its input_layout packed: the model takes its scalar float columns as one float32
            [batch, n] input and its whole-number columns as one int32 [batch, n] input,
            other inputs (strings, images) as their own (common.tflite.packing); columns:
            one input per column, as the signature takes them.
        timing: the latency settings as one common.tflite.latency.Timing (with its
            num_threads), in place of the options' latency_batch_size, latency_runs and
            latency_seconds, which are then left at their defaults; checked as they are.
    """
    started = time.monotonic()
    tensorflow_threads()  # before TensorFlow's first op: pools sized to the CPU limit
    options, timing = _timed(QuantizeOptions.given(options, settings), timing)
    mapping = tflite_binding.parse_mapping(options.input_mapping)
    loaded, fn, signature = tflite_inputs.load_model(model_dir, options.signature)
    schema = tflite_inputs.dataset_schema(dataset)
    binding = tflite_binding.bind(fn, signature, schema, f"dataset {dataset}", mapping)
    packing = tflite_packing.for_binding(fn, binding, schema, options.input_layout)
    examples = tflite_inputs.load_examples(dataset, options.eval_split, options.eval_examples,
                                           binding, "evaluation")
    reference = tflite_inputs.reference_outputs(fn, examples)
    prepared = tflite_convert.prepare(fn)
    frozen = freeze.freeze(loaded, fn, prepared.frozen)
    sweep = _Sweep.plan(options.quantization, options.modes, frozen, options.sweep_seconds)
    calibration = None
    if any(tflite_modes.MODES[m].calibrated for m in sweep.modes):
        calibration = tflite_inputs.load_examples(dataset, options.calibration_split,
                                                  options.calibration_examples, binding,
                                                  "calibration")
    frozen_out = freeze.run_graph(frozen.graph_def, frozen.inputs, frozen.outputs, examples)
    frozen_figures = tflite_parity.outputs_figures(frozen_out, reference, binding.reading, None)
    gate = Gate(options.max_accuracy_drop, options.max_relative_error,
                max_rmse_increase=options.max_rmse_increase)
    run = _Run(model_dir, signature, calibration, options.integer_io, options.select_tf_ops,
               examples, reference, timing, prepared.feeding.fills, binding.reading, packing)
    with tflite_convert.convertible(model_dir, signature, fn, prepared, packing) as source:
        contents, figures, skipped, cut = _measure_modes(run, source, sweep)
    chosen = choose(figures, skipped, cut, options.quantization, gate, model_dir,
                    options.sweep_seconds)
    result = FreezeQuantizeResult(
        mode=chosen.mode, signature=signature, figures=figures, frozen=frozen.spec(),
        frozen_agreement=frozen_figures["agreement"],
        frozen_max_abs_diff=frozen_figures["max_abs_diff"], tflite_dir=tflite_dir,
        frozen_dir=frozen_dir, seconds=time.monotonic() - started, skipped=skipped,
        input_columns=binding.columns, gate=gate, model_dir=model_dir,
        sweep_seconds=sweep.seconds, cut=cut)
    uris.publish_dir(frozen.files(), frozen_dir)
    converter = {"integer_io": options.integer_io, "select_tf_ops": options.select_tf_ops,
                 "fills": {k: tflite_feeding.to_json(v)
                           for k, v in sorted(prepared.feeding.fills.items())},
                 **quantized.layout_json(options.input_layout, packing)}
    quantized.write(tflite_dir, contents[chosen.mode], {**result.metadata(), **converter})
    log.info("chose %s: %s", chosen.mode, chosen.summary())
    return result


def _timed(options: QuantizeOptions, timing: Timing | None
           ) -> Tuple[QuantizeOptions, Timing]:
    """(options, Timing) of a call: the Timing its latency settings make, or the one given
    in their place (then its values are the options', and checked as theirs are)."""
    if timing is None:
        return options, Timing(options.latency_batch_size, options.latency_runs,
                               seconds=options.latency_seconds)
    defaults = QuantizeOptions.defaults()
    given = [name for name in LATENCY if getattr(options, name) != defaults[name]]
    if given:
        raise TypeError(f"give timing or {', '.join(given)}, not both")
    return dataclasses.replace(options, latency_batch_size=timing.batch_size,
                               latency_runs=timing.runs, latency_seconds=timing.seconds), timing


@dataclasses.dataclass(frozen=True)
class _Run:
    """What every mode is converted from and measured on."""

    model_dir: str
    signature: str
    calibration: object  # tflite_inputs.Examples or None
    integer_io: bool
    select_tf_ops: bool
    examples: object  # tflite_inputs.Examples
    reference: Dict
    timing: Timing
    fills: Dict  # by signature input
    reading: Reading
    packing: tflite_packing.Packing  # the converted model's blocks (none: columns)


@dataclasses.dataclass(frozen=True)
class _Sweep:
    """The modes to convert, in table order, and what auto leaves out; ``auto`` False: one
    explicit mode, which must convert (no budget)."""

    modes: Tuple[str, ...]
    left_out: Dict[str, str]  # mode -> why it is not swept
    auto: bool
    seconds: float  # budget; 0: none

    @classmethod
    def plan(cls, quantization: str, modes: Sequence[str] | None, frozen,
             seconds: float) -> "_Sweep":
        if quantization != tflite_modes.AUTO:
            return cls((quantization,), {}, False, 0.0)
        asked = tflite_modes.check_sweep(modes)
        if asked:
            return cls(asked, {}, True, seconds)
        op_types = set(frozen.ops_before) | set(frozen.ops_after)
        return cls(*tflite_modes.default_sweep(op_types), True, seconds)

    def deadline(self) -> Deadline:
        """Set at the sweep's first conversion: auto's budget, none for one explicit mode."""
        return Deadline.after(self.seconds if self.auto else 0.0)

    def not_started(self, deadline: Deadline, conversion: float | None) -> str:
        """Why a mode is not started now, its conversion expected to take ``conversion``
        seconds (empty: it may start; None: no mode has started, and the first one always
        does: the deadline counts from it)."""
        if conversion is None or not deadline.bounded or deadline.allows(conversion):
            return ""
        spent = self.seconds - deadline.left()
        return (f"not started: the sweep had spent {spent:.1f}s of its sweep_seconds budget "
                f"of {self.seconds:g}s and a conversion took up to {conversion:.1f}s")


def _measure_modes(run: _Run, source: str, sweep: _Sweep):
    """({mode: bytes}, [Figures], {mode: why skipped}, {mode: why cut short}); auto skips
    a mode that does not convert, load or run in LiteRT, or would not end in time; an
    explicit mode fails the step. A cut mode measured in part is in the figures too."""
    contents, figures, skipped, cut = {}, [], dict(sweep.left_out), {}
    deadline, conversion = sweep.deadline(), None
    if deadline.bounded:
        log.info("auto: sweeping %s within sweep_seconds %gs", ", ".join(sweep.modes),
                 sweep.seconds)
    for mode in sweep.modes:
        late = sweep.not_started(deadline, conversion)
        if late:
            skipped[mode] = late
            log.warning("auto: skipping %s: %s", mode, late)
            continue
        began = time.monotonic()
        try:
            contents[mode], measured, took, nothing = _convert_and_measure(run, source, mode,
                                                                           deadline)
        except CONVERSION_FAILURES as err:
            if not sweep.auto:
                raise
            conversion = max(conversion or 0.0, time.monotonic() - began)
            skipped[mode] = f"{_reason(err)} (after {time.monotonic() - began:.1f}s)"
            log.warning("auto: skipping %s: %s", mode, skipped[mode])
            continue
        conversion = max(conversion or 0.0, took)
        if measured is None:
            cut[mode] = nothing
        else:
            figures.append(measured)
            if measured.cut_short:
                cut[mode] = f"cut short: {measured.cut_short}"
        if mode in cut:
            log.warning("auto: %s %s", mode, cut[mode])
    order = tflite_modes.MODES
    return (contents, figures, {m: skipped[m] for m in order if m in skipped},
            {m: cut[m] for m in order if m in cut})


def _reason(err: Exception) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:400]}"


def _convert_and_measure(run: _Run, source: str, mode: str, deadline: Deadline):
    """(content, figures, seconds the conversion took, ""); figures None and why, when the
    deadline leaves no time to measure the converted model at all."""
    started = time.monotonic()
    packing, fills = run.packing, run.packing.fills(run.fills)
    representative = (tflite_convert.representative_dataset(
        packing.feed(run.calibration.features), fills, run.calibration.batch)
        if tflite_modes.MODES[mode].calibrated else None)
    content = tflite_convert.convert(run.model_dir, run.signature, mode, representative,
                                     integer_io=run.integer_io,
                                     select_tf_ops=run.select_tf_ops, source=source,
                                     packed=bool(packing))
    converted = time.monotonic() - started
    try:
        figures = tflite_parity.compare(mode, content, run.signature,
                                        tflite_packing.pack_examples(packing, run.examples),
                                        run.reference, run.timing, fills, run.reading,
                                        deadline)
    except OutOfTime as err:
        return content, None, converted, (f"cut short: converted in {converted:.1f}s, then "
                                          f"{err}; nothing was measured")
    figures = dataclasses.replace(figures, seconds=time.monotonic() - started)
    log.info("%s: %s (%.1fs)", mode, figures.summary(), figures.seconds)
    return content, figures, converted, ""
