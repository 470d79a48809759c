"""The edge export pipeline: freeze and quantize a SavedModel, then export a TFLite bundle.

The SavedModel (tfkfp's, or any other: ``signature`` and ``input_mapping`` say what to convert
and which columns feed it) and a Dataset come in by URI through ``dsl.importer``.
freeze_quantize measures each quantization mode in LiteRT and keeps the smallest model within
the accuracy budget (or the mode asked for); export_tflite takes that model, checks it against
the SavedModel on held-out examples and writes the bundle an app ships, or fails the run.
"""

from typing import Any, Dict, NamedTuple

from kfp import dsl

from tfkfp.components.export_tflite.component import export_tflite
from tfkfp.components.freeze_quantize.component import freeze_quantize
from tfkfp.pipelines import checks
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import defaults_of

DEFAULTS = defaults_of(freeze_quantize, export_tflite)  # the steps': step_defaults.py


class Outputs(NamedTuple):
    bundle: dsl.Model


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-edge-export",
              description="Freeze, quantize and export a SavedModel to TFLite, gated on "
                          "accuracy in LiteRT.")
def edge_export(
    model_uri: str,
    dataset_uri: str,
    quantization: str = DEFAULTS.quantization,
    signature: str = DEFAULTS.signature,
    input_mapping: dict = DEFAULTS.input_mapping,
    max_accuracy_drop: float = DEFAULTS.max_accuracy_drop,
    min_agreement: float = DEFAULTS.min_agreement,
    max_relative_error: float = DEFAULTS.max_relative_error,
    max_rmse_increase: float = DEFAULTS.max_rmse_increase,
    calibration_examples: int = DEFAULTS.calibration_examples,
    eval_examples: int = DEFAULTS.eval_examples,
    integer_io: bool = DEFAULTS.integer_io,
    select_tf_ops: bool = DEFAULTS.select_tf_ops,
    modes: list = DEFAULTS.modes,
    sweep_seconds: float = DEFAULTS.sweep_seconds,
    latency_batch_size: int = DEFAULTS.latency_batch_size,
    latency_runs: int = DEFAULTS.latency_runs,
    latency_seconds: float = DEFAULTS.latency_seconds,
    input_layout: str = DEFAULTS.input_layout,
) -> Outputs:
    """Freezes and quantizes a SavedModel, then exports a validated TFLite bundle.

    Args:
        model_uri: A SavedModel directory (gs:// on a cluster): from train, or any other.
        dataset_uri: A sharded Dataset directory whose columns feed the model (calibration
            from its train split, measurement and validation from its eval split).
        quantization: none, dynamic, float16, int8, int16x8 or auto (smallest within the
            budget; modes that fail to convert or run in LiteRT are skipped).
        signature: The signature to convert; empty: serving_raw if present, else
            serving_default.
        input_mapping: Signature input name -> Dataset column, for inputs whose name is not
            a column (a one-input model takes the single image or feature column).
        max_accuracy_drop: Largest accepted accuracy drop vs the SavedModel (0.01: a point);
            without labels, the largest share of examples whose top class changes.
        min_agreement: Smallest accepted top-1 agreement with the SavedModel at export.
        max_relative_error: Largest accepted relative error of outputs that are neither
            class scores nor a regressor's value.
        max_rmse_increase: A regressor's largest accepted RMSE increase over the
            SavedModel's, relative (0.05: 5% higher).
        calibration_examples: Representative examples for int8 and int16x8.
        eval_examples: Eval examples each mode is measured and the export validated on.
        integer_io: int8 only: float inputs and outputs become int8 too.
        select_tf_ops: Allow TensorFlow (Flex) ops that have no TFLite builtin.
        modes: The modes auto sweeps, e.g. ["dynamic", "int8"]; empty: those worth their
            time for the model's kind (all but int16x8 for a model with convolutions).
        sweep_seconds: auto's time budget in seconds for the whole sweep, the mode in
            progress included: a mode that would not end within it is not started or cut
            short (named in the report, never chosen); the run fails when no mode was
            measured in full; 0: no budget.
        latency_batch_size: Batch size of the per-batch latency figure (smaller when one
            call would not fit in latency_seconds).
        latency_runs: Timed calls per latency figure at most (the median is reported).
        latency_seconds: Seconds each mode's latency figures may take together, whichever
            of this and latency_runs comes first.
        input_layout: The bundle's inputs for a tabular model: packed (one float32 and one
            int32 [batch, n] input in the schema's column order, what mobile apps feed) or
            columns (one input per column).

    Returns:
        bundle: The TFLite bundle that passed the accuracy gate (model.tflite, labels.txt,
            signature.json); its quantization mode, size, accuracy and agreement with the
            SavedModel in its metadata.
    """
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset, reimport=False)
    quantized = freeze_quantize(model=model.output, dataset=data.output, quantization=quantization,
                                signature=signature, input_mapping=input_mapping,
                                max_relative_error=max_relative_error,
                                max_accuracy_drop=max_accuracy_drop,
                                max_rmse_increase=max_rmse_increase,
                                calibration_examples=calibration_examples,
                                eval_examples=eval_examples, integer_io=integer_io,
                                select_tf_ops=select_tf_ops, modes=modes,
                                sweep_seconds=sweep_seconds,
                                latency_batch_size=latency_batch_size,
                                latency_runs=latency_runs, latency_seconds=latency_seconds,
                                input_layout=input_layout)
    exported = export_tflite(model=model.output, dataset=data.output,
                             tflite_model=quantized.outputs["tflite_model"],
                             signature=signature, input_mapping=input_mapping,
                             max_relative_error=max_relative_error, eval_examples=eval_examples,
                             max_accuracy_drop=max_accuracy_drop, min_agreement=min_agreement,
                             max_rmse_increase=max_rmse_increase, input_layout=input_layout)
    return Outputs(bundle=exported.outputs["bundle"])


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse what freeze_quantize or export_tflite would refuse before loading anything
    (mode, example counts, budgets and latency settings, the agreement gate, the input
    mapping's form), by their own options classes, before a run starts."""
    from tfkfp.components.export_tflite.options import ExportOptions
    from tfkfp.components.freeze_quantize.options import QuantizeOptions

    values = checks.with_defaults(edge_export, arguments)
    checks.check_step(freeze_quantize, QuantizeOptions,
                      checks.fed(edge_export, freeze_quantize, values))
    checks.check_step(export_tflite, ExportOptions, {
        **checks.fed(edge_export, export_tflite, values), "quantized_dir": checks.QUANTIZED})
