"""KFP component: is training bound by input, compute or memory? (see core)."""

from kfp import dsl
from kfp.dsl import HTML, Dataset, Input, Markdown, Metrics, Output

from tfkfp.components._image import IMAGE


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def diagnose_bottleneck(
    dataset: Input[Dataset],
    metrics: Output[Metrics],
    report: Output[Markdown],
    charts: Output[HTML],
    model_name: str = "mlp",
    model_fn: str = "",
    hidden_units: str = "256,128",
    batch_size: int = 64,
    strategy: str = "default",
    precision: str = "float32",
    cache: bool = False,
    task: str = "auto",
    memory_limit_mb: int = 0,
    seconds: float = 3.0,
) -> str:
    """Measures whether training is input-, compute- or memory-bound and ranks remedies.

    Measures on this machine and data: the input pipeline alone (records/s and MB/s, read
    cold without parsing and through train's parsing pipeline), the training step alone on
    batches held in memory, and both together; and the step's memory need (parameters,
    gradients, optimizer slots, activations, input batch, cache) against the budget.

    Args:
        dataset: Sharded Dataset from shard_tfrecords (its train split is measured).
        metrics: Output throughputs (records/s), input-wait share, memory figures in MB.
        report: Output Markdown report: verdict, throughput chart, ranked remedies, figures.
        charts: Output page of the throughput chart, which every supported Kubeflow UI
            shows (the Markdown's inline image needs KFP 2.17's UI); empty when the step
            did not run (memory-bound before it started).
        model_name: mlp, cnn, resnet50 or mobilenet_v2, as in train.
        model_fn: package.module:function returning an uncompiled tf_keras model for
            (schema, num_classes); overrides model_name.
        hidden_units: Comma-separated sizes of the dense layers on top, as in train.
        batch_size: Per-replica batch size, as in train.
        strategy: default, one_device, mirrored or tpu (strategies that run in one process).
        precision: float32, mixed_float16 or mixed_bfloat16.
        cache: Measure with train's in-memory cache of the records (after the first epoch).
        task: auto (a float label is regressed on, an integer or string label classified),
            classification or regression, as in train.
        memory_limit_mb: Memory training may use, in MB; 0 is what the machine has available.
        seconds: Wall time for each measurement.

    Returns:
        The verdict: input-bound, compute-bound or memory-bound.
    """
    settings = dict(locals())  # the step's parameters, by name, before anything else is bound
    import logging
    import os

    from tfkfp.components.common.charts.page import write_page
    from tfkfp.components.diagnose_bottleneck.core import diagnose_bottleneck as diagnose
    from tfkfp.components.diagnose_bottleneck.options import DiagnoseOptions

    logging.basicConfig(level=logging.INFO)
    result = diagnose(dataset.path, DiagnoseOptions.of(settings))
    for name, value in result.metrics().items():
        metrics.log_metric(name, value)
    report.metadata.update(result.metadata())
    with open(report.path + ".tmp", "w") as f:
        f.write(result.markdown())
    os.replace(report.path + ".tmp", report.path)
    write_page(charts.path, "Bottleneck diagnosis", result.charts())
    return result.verdict
