"""The edge export pipeline: freeze and quantize a trained model, then export a TFLite bundle.

The SavedModel and the Dataset it was trained on come in by URI through ``dsl.importer``.
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


class Outputs(NamedTuple):
    bundle: dsl.Model


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-edge-export",
              description="Freeze, quantize and export a tfkfp model to TFLite, gated on "
                          "accuracy in LiteRT.")
def edge_export(
    model_uri: str,
    dataset_uri: str,
    quantization: str = "auto",
    max_accuracy_drop: float = 0.01,
    min_agreement: float = 0.98,
    calibration_examples: int = 300,
    eval_examples: int = 1000,
    integer_io: bool = False,
    select_tf_ops: bool = False,
) -> Outputs:
    """Freezes and quantizes a tfkfp SavedModel, then exports a validated TFLite bundle.

    Args:
        model_uri: A tfkfp SavedModel directory (gs:// on a cluster), e.g. from train.
        dataset_uri: The sharded Dataset directory the model was trained on (calibration
            from its train split, measurement and validation from its eval split).
        quantization: none, dynamic, float16, int8, int16x8 or auto (smallest within the budget).
        max_accuracy_drop: Largest accepted accuracy drop vs the SavedModel (0.01: a point).
        min_agreement: Smallest accepted top-1 agreement with the SavedModel at export.
        calibration_examples: Representative examples for int8 and int16x8.
        eval_examples: Eval examples each mode is measured and the export validated on.
        integer_io: int8 only: float inputs and outputs become int8 too.
        select_tf_ops: Allow TensorFlow (Flex) ops that have no TFLite builtin.

    Returns:
        bundle: The TFLite bundle that passed the accuracy gate (model.tflite, labels.txt,
            signature.json); its quantization mode, size, accuracy and agreement with the
            SavedModel in its metadata.
    """
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    data = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset, reimport=False)
    quantized = freeze_quantize(model=model.output, dataset=data.output, quantization=quantization,
                                max_accuracy_drop=max_accuracy_drop,
                                calibration_examples=calibration_examples,
                                eval_examples=eval_examples, integer_io=integer_io,
                                select_tf_ops=select_tf_ops)
    exported = export_tflite(model=model.output, dataset=data.output,
                             quantized_model=quantized.outputs["tflite_model"],
                             eval_examples=eval_examples,
                             max_accuracy_drop=max_accuracy_drop, min_agreement=min_agreement)
    return Outputs(bundle=exported.outputs["bundle"])


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse what freeze_quantize or export_tflite would refuse before loading anything
    (mode, example counts, the agreement gate), by their own checks, before a run starts."""
    from tfkfp.components.export_tflite.core import check_options as check_export
    from tfkfp.components.freeze_quantize.core import check_options as check_quantize

    values = checks.with_defaults(edge_export, arguments)
    checks.check_step(freeze_quantize, check_quantize, checks.pick(
        values, "quantization", "calibration_examples", "eval_examples"))
    checks.check_step(export_tflite, check_export, {
        "quantized_dir": checks.QUANTIZED, **checks.pick(values, "eval_examples", "min_agreement")})
