"""KFP component: train a classifier or a regressor on a sharded Dataset (see core.train)."""

from kfp import dsl
from kfp.dsl import (
    HTML,
    Artifact,
    ClassificationMetrics,
    Dataset,
    Input,
    Markdown,
    Metrics,
    Model,
    Output,
)

from tfkfp.components._image import IMAGE
from tfkfp.components.common.platform.signals import exec_python


@exec_python  # a cancelled step's SIGTERM reaches Python, which stops the cluster job
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def train(
    dataset: Input[Dataset],
    model: Output[Model],
    metrics: Output[Metrics],
    classification: Output[ClassificationMetrics],
    report: Output[Markdown],
    charts: Output[HTML],
    tensorboard: Output[Artifact],
    gcp_resources: dsl.OutputPath(str),
    warm_start_model: Input[Model] = None,
    warm_start_model_uri: str = "",
    model_name: str = "mlp",
    model_fn: str = "",
    hidden_units: str = "256,128",
    strategy: str = "default",
    workers: int = 2,
    parameter_servers: int = 1,
    epochs: int = 5,
    batch_size: int = 64,
    global_batch_size: int = 0,
    learning_rate: float = 0.001,
    optimizer: str = "adam",
    precision: str = "float32",
    jit_compile: bool = False,
    steps_per_execution: int = 8,
    steps_per_epoch: int = 0,
    cache: bool = False,
    shuffle_buffer: int = 10000,
    checkpoint_dir: str = "",
    task: str = "auto",
    loss: str = "",
    target_metric: str = "",
    target_value: float = 0.0,
    tpu: str = "",
    seed: int = 0,
    launcher: str = "local",
    launcher_options: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
):
    """Trains a classifier or regressor with a chosen tf.distribute strategy; exports a SavedModel.

    Args:
        dataset: Sharded Dataset from shard_tfrecords (train and eval splits, schema).
        model: Output SavedModel with signatures serving_default (serialized tf.Example)
            and serving_raw (feature tensors), answering class scores or a regressor's
            value; schema (and class names) as assets.
        metrics: Output eval loss and accuracy (regression: RMSE, MAE, R²), examples/s,
            mean step time, input-wait share, time to the target.
        classification: Output confusion matrix on the eval split, with the class names,
            and for two classes the ROC curve of the second; the KFP UI draws both (empty
            for a regressor).
        report: Output Markdown report: summary, per-epoch curves and table; a regressor's
            predicted against actual values and its error distribution.
        charts: Output page of charts every supported Kubeflow UI shows: loss and the
            task's figure per epoch, one line per split; a classifier's confusion matrix,
            precision, recall and F1 per class, and ROC and precision-recall curves per
            class; a regressor's predicted against true values and residuals.
        tensorboard: Output TensorBoard log directory.
        gcp_resources: Output naming the Vertex AI CustomJob of launcher vertex, by which
            Vertex AI Pipelines links and cancels it; no resources for the other launchers.
        warm_start_model: Optional earlier Model from train to continue from.
        warm_start_model_uri: The same by URI (gs://... or a path the step can read), in
            place of warm_start_model; empty for none.
        model_name: mlp, cnn, resnet50 or mobilenet_v2.
        model_fn: package.module:function returning an uncompiled tf_keras model for
            (schema, outputs): outputs is the number of classes, or 1 for a regressor
            (answering in the label's units); overrides model_name.
        hidden_units: Comma-separated sizes of the dense layers on top.
        strategy: default, one_device, mirrored, multi_worker_mirrored,
            parameter_server or tpu.
        workers: Worker processes for multi_worker_mirrored and parameter_server.
        parameter_servers: Parameter server processes for parameter_server.
        epochs: Epochs to train (a resumed run continues to this count).
        batch_size: Per-replica batch size; the global batch is this x replicas.
        global_batch_size: Global batch size instead of batch_size x replicas; 0 to derive.
        learning_rate: Optimizer learning rate.
        optimizer: adam, sgd or rmsprop.
        precision: float32, mixed_float16 or mixed_bfloat16.
        jit_compile: Compile the training step with XLA.
        steps_per_execution: Training steps run per call into TensorFlow (8: a small
            model's step is otherwise dominated by per-step dispatch; per-step callbacks see
            every 8th step).
        steps_per_epoch: Steps per epoch; 0 is one pass over the train split.
        cache: Cache the parsed-ready records in memory after the first epoch.
        shuffle_buffer: Records in the shuffle buffer.
        checkpoint_dir: URI for epoch checkpoints that outlive the pod; a rerun resumes
            from the newest. Empty keeps them only for this run.
        task: auto (a float label is regressed on, an integer or string label classified),
            classification or regression.
        loss: Empty for the task's own (crossentropy; regression: mse), or huber
            (regression, in units of the label's standard deviation).
        target_metric: The eval figure whose target is timed: accuracy or loss
            (classification), rmse, mae, r2 or loss (regression); empty: accuracy or rmse.
        target_value: The target: the first epoch at or above it (accuracy, r2) or at or
            below it (rmse, mae, loss) is timed; 0 for none.
        tpu: TPU name or address for strategy tpu; empty looks for a local TPU.
        seed: Random seed.
        launcher: Where the cluster runs: local (processes in this step's pod), trainjob (a
            Kubeflow Trainer v2 TrainJob), tfjob (a Kubeflow Training Operator TFJob) or
            vertex (a Vertex AI CustomJob).
        launcher_options: For trainjob, tfjob and vertex: job_dir (storage all replicas
            reach; default beside the model), image, deadline_seconds, service_account, gpus;
            trainjob and tfjob: namespace, job_name, cpu, memory, volume_claim, mount_path;
            trainjob: runtime; tfjob: backoff_limit; vertex: project, region, machine_type,
            gpu_type (with gpus).
    """
    import logging

    from tfkfp.components.common.charts.page import write_page
    from tfkfp.components.common.model.classification import log_to
    from tfkfp.components.train.core import train as run_training
    from tfkfp.components.train.core import warm_start_from
    from tfkfp.components.train.report import class_metrics

    logging.basicConfig(level=logging.INFO)
    result = run_training(
        dataset.path, model.path, model_name=model_name, model_fn=model_fn,
        hidden_units=hidden_units, strategy=strategy, workers=workers,
        parameter_servers=parameter_servers, epochs=epochs, batch_size=batch_size,
        global_batch_size=global_batch_size, learning_rate=learning_rate, optimizer=optimizer,
        precision=precision, jit_compile=jit_compile, steps_per_execution=steps_per_execution,
        steps_per_epoch=steps_per_epoch, cache=cache, shuffle_buffer=shuffle_buffer,
        checkpoint_dir=checkpoint_dir, tensorboard_dir=tensorboard.path,
        warm_start=warm_start_from(warm_start_model.path if warm_start_model else "",
                                   warm_start_model_uri),
        task=task, loss=loss, target_metric=target_metric, target_value=target_value, tpu=tpu,
        seed=seed, launcher=launcher,
        launcher_options=launcher_options, gcp_resources=gcp_resources)
    model.metadata.update(result.metadata())
    for name, value in {**result.metrics(), **class_metrics(result.classification())}.items():
        metrics.log_metric(name, value)
    log_to(classification, result.classification())  # a regressor's: a note saying why not
    with open(report.path, "w") as f:
        f.write(result.markdown())
    write_page(charts.path, "Training", result.charts())


def gpu_train():
    """The same component in the GPU image, for a pipeline compiled with a GPU request."""
    from tfkfp.components._image import GPU_IMAGE

    return exec_python(dsl.component(base_image=GPU_IMAGE,
                                     install_kfp_package=False)(train.python_func))
