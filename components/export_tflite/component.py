"""KFP component: export a validated TFLite bundle (see core.export_tflite)."""

from kfp import dsl
from kfp.dsl import (
    HTML,
    ClassificationMetrics,
    Dataset,
    Input,
    Markdown,
    Metrics,
    Model,
    Output,
)

from tfkfp.components._image import IMAGE


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def export_tflite(
    model: Input[Model],
    dataset: Input[Dataset],
    bundle: Output[Model],
    metrics: Output[Metrics],
    classification: Output[ClassificationMetrics],
    report: Output[Markdown],
    charts: Output[HTML],
    tflite_model: Input[Model] = None,
    quantization: str = "auto",
    signature: str = "",
    input_mapping: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    max_relative_error: float = 0.05,
    eval_examples: int = 1000,
    calibration_examples: int = 300,
    max_accuracy_drop: float = 0.01,
    min_agreement: float = 0.98,
    max_rmse_increase: float = 0.05,
    integer_io: bool = False,
    select_tf_ops: bool = False,
    input_layout: str = "packed",
):
    """Exports a deployable TFLite bundle, validated against the SavedModel in LiteRT.

    Args:
        model: SavedModel from train, or any SavedModel whose signature the Dataset feeds.
        dataset: Sharded Dataset matching the model: validation examples come from its eval
            split (and int8 calibration examples from its train split).
        bundle: Output folder: model.tflite, labels.txt, signature.json (input and output
            names, shapes, dtypes, quantization, normalisation, a packed input's columns
            in order), schema.json (the columns
            it was trained on) and validation.json; model.tflite also holds signature.json's
            facts and the class names as its tfkfp.app.json metadata, for an app.
        metrics: Output size, accuracy of both models, accuracy drop, top-1 agreement (a
            regressor: RMSE of both and its increase), max and mean absolute difference.
        classification: Output confusion matrix of the TFLite model on the validation
            examples, with the class names, and for two classes the ROC curve of the second;
            the KFP UI draws both.
        report: Output Markdown summary of the validation and gate; a regressor's
            predicted against actual values and its error distribution.
        charts: Output page of the TFLite model's charts on the validation examples, which
            every supported Kubeflow UI shows: a regressor's predicted against true values
            and residuals; a classifier's confusion matrix, precision, recall and F1 per
            class, and ROC and precision-recall curves per class. Empty without labels.
        tflite_model: Optional, freeze_quantize's tflite_model: export it as chosen there
            instead of converting here.
        quantization: none, dynamic, float16, int8 or int16x8 to convert here; auto (needs
            tflite_model) to export that model in the mode freeze_quantize chose,
            converting nothing here (freeze_quantize's auto is the sweep).
        signature: SavedModel signature converted and compared; empty: serving_raw when the
            model has it, else serving_default.
        input_mapping: Signature input name -> Dataset column (else fed by name, or the
            single image or feature column).
        max_relative_error: Gate: largest accepted relative error of outputs that are
            neither class scores nor a regressor's value.
        eval_examples: Held-out eval-split examples compared in LiteRT.
        calibration_examples: Representative examples when converting int8 or int16x8.
        max_accuracy_drop: Gate: largest accepted accuracy drop, as a fraction (0.01 is one
            point); the step fails above it.
        min_agreement: Gate: smallest accepted share of examples whose top class matches
            the SavedModel's.
        max_rmse_increase: Gate for a regressor: largest accepted RMSE increase over the
            SavedModel's, relative (0.05: 5% higher); the step fails above it.
        integer_io: int8 only: make float inputs and outputs int8 as well.
        select_tf_ops: Allow TensorFlow (Flex) ops that have no TFLite builtin.
        input_layout: packed: the model takes its scalar float columns as one float32
            [batch, n] input and its whole-number columns as one int32 [batch, n] input
            (strings and images stay inputs of their own), the column order in
            signature.json; columns: one input per column. With tflite_model, the layout
            freeze_quantize converted in.
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging

    from tfkfp.components.common.charts.classes import metrics as class_metrics
    from tfkfp.components.common.charts.page import write_page
    from tfkfp.components.common.model.classification import log_to
    from tfkfp.components.export_tflite.core import export_tflite as run
    from tfkfp.components.export_tflite.options import ExportOptions

    logging.basicConfig(level=logging.INFO)
    options = ExportOptions.of(settings, quantized_dir=tflite_model.path if tflite_model else "")
    result = run(model.path, dataset.path, bundle.path, options)
    bundle.metadata.update(result.metadata())
    for name, value in {**result.metrics(), **class_metrics(result.classification or {})
                        }.items():
        metrics.log_metric(name, value)
    log_to(classification, result.classification)
    with open(report.path, "w") as f:
        f.write(result.markdown())
    write_page(charts.path, "TFLite export", result.charts())
