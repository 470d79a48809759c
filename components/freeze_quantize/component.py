"""KFP component: freeze a SavedModel and quantize it to TFLite (see core.freeze_quantize)."""

from kfp import dsl
from kfp.dsl import HTML, Dataset, Input, Markdown, Metrics, Model, Output

from tfkfp.components._image import IMAGE


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def freeze_quantize(
    model: Input[Model],
    dataset: Input[Dataset],
    tflite_model: Output[Model],
    frozen_graph: Output[Model],
    metrics: Output[Metrics],
    report: Output[Markdown],
    charts: Output[HTML],
    quantization: str = "auto",
    max_accuracy_drop: float = 0.01,
    signature: str = "",
    input_mapping: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    max_relative_error: float = 0.05,
    max_rmse_increase: float = 0.05,
    calibration_examples: int = 300,
    eval_examples: int = 1000,
    integer_io: bool = False,
    select_tf_ops: bool = False,
    latency_batch_size: int = 256,
    latency_runs: int = 20,
    latency_seconds: float = 10.0,
    modes: list = [],  # noqa: B006 - KFP reads the default; it is never mutated
    sweep_seconds: float = 900.0,
    input_layout: str = "packed",
):
    """Freezes a SavedModel into an inference graph and quantizes it to TFLite, measuring each mode.

    Args:
        model: SavedModel from train, or any SavedModel (tf.saved_model.save, tf_keras,
            Keras 3 model.export()).
        dataset: Sharded Dataset whose columns feed the signature's inputs: calibration
            examples come from its train split, measurements from its eval split.
        tflite_model: Output folder: model.tflite in the chosen mode and quantization.json
            (mode and figures), also in the artifact metadata.
        frozen_graph: Output folder: frozen_graph.pb (variables as constants, Grappler
            optimised) and frozen_graph.json (tensor names, node counts, op histograms).
        metrics: Output size, accuracy, accuracy drop, agreement and LiteRT latency (with
            the calls timed) per mode, and how many modes were skipped or cut short.
        report: Output Markdown table of every mode tried (why one was skipped or cut
            short by sweep_seconds) and of the freezing.
        charts: Output page of model size against eval accuracy (a regressor: RMSE) per
            mode measured, the gate's line drawn, the chosen and refused modes marked;
            empty when no mode has the figure (a model whose output is neither class
            scores over the Dataset's labels nor a regressor's value).
        quantization: none, dynamic, float16, int8, int16x8, or auto (sweeps the modes of
            modes, skips one that fails to convert or run in LiteRT, keeps the smallest
            within the gate).
        max_accuracy_drop: Largest accepted eval accuracy drop vs the SavedModel, as a
            fraction (0.01 is one point); without labels, the largest share of examples
            whose top class changes; the step fails above it.
        signature: SavedModel signature to freeze and convert; empty: serving_raw when the
            model has it, else serving_default.
        input_mapping: Signature input name -> Dataset column; inputs not named are fed
            from the column of the same name, or a one-input model from the single image
            or feature column.
        max_relative_error: Largest accepted relative error of outputs that are neither
            class scores nor a regressor's value.
        max_rmse_increase: A regressor's largest accepted eval RMSE increase over the
            SavedModel's, relative (0.05: 5% higher); the step fails above it.
        calibration_examples: Representative examples for int8 and int16x8 (100-500).
        eval_examples: Eval-split examples each mode is measured on.
        integer_io: int8 only: make float inputs and outputs int8 as well.
        select_tf_ops: Allow TensorFlow (Flex) ops that have no TFLite builtin.
        latency_batch_size: Batch size of the per-batch latency figure (smaller when one
            call of it would not fit in latency_seconds; the report gives the size).
        latency_runs: Timed calls per latency figure at most (the median is reported, and
            how many calls were timed; five times as many one-row calls).
        latency_seconds: Seconds each mode's latency figures may take together: timing
            stops at latency_runs calls or at this, whichever comes first.
        modes: The modes auto sweeps, e.g. ["dynamic", "int8"]; empty: those worth their
            time for the model's kind (all but int16x8 for a model with convolutions, whose
            int16x8 kernels in LiteRT are slow reference ones).
        sweep_seconds: auto's time budget in seconds for the whole sweep, from its first
            conversion: a mode whose conversion would not end within it is not started, one
            whose evaluation or latency would not is cut short (its figures so far in the
            report, never chosen); the smallest mode within the gate among those measured
            in full is kept, and the step fails when none was; 0: no budget.
        input_layout: packed: the model takes its scalar float columns as one float32
            [batch, n] input and its whole-number columns as one int32 [batch, n] input
            (strings and images stay inputs of their own); columns: one input per column.
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging

    from tfkfp.components.common.charts.page import write_page
    from tfkfp.components.freeze_quantize.core import freeze_quantize as run
    from tfkfp.components.freeze_quantize.options import QuantizeOptions

    logging.basicConfig(level=logging.INFO)
    result = run(model.path, dataset.path, tflite_model.path, frozen_graph.path,
                 QuantizeOptions.of(settings))
    tflite_model.metadata.update(result.metadata())
    frozen_graph.metadata.update(result.frozen_metadata())
    for name, value in result.metrics().items():
        metrics.log_metric(name, value)
    with open(report.path, "w") as f:
        f.write(result.markdown())
    write_page(charts.path, "Freeze and quantize", result.charts())
