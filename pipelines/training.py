"""The training pipeline: shard the input data into TFRecords, then train on it."""

from kfp import dsl

from tfkfp.components.shard_tfrecords.component import shard_tfrecords
from tfkfp.components.train.component import train

TRAIN_CPU, TRAIN_MEMORY = "4", "16G"


@dsl.pipeline(name="tfkfp-training",
              description="Shard data into TFRecords and train a classifier with a chosen "
                          "tf.distribute strategy.")
def training(
    input_uri: str,
    label: str = "label",
    keys: list = [],  # noqa: B006 - KFP reads defaults from the signature
    eval_fraction: float = 0.1,
    compression: str = "none",
    model_name: str = "mlp",
    model_fn: str = "",
    hidden_units: str = "256,128",
    strategy: str = "default",
    workers: int = 2,
    parameter_servers: int = 1,
    epochs: int = 5,
    batch_size: int = 64,
    learning_rate: float = 0.001,
    precision: str = "float32",
    checkpoint_dir: str = "",
    target_accuracy: float = 0.0,
) -> dsl.Model:
    """Shards the input (CSV, JSON Lines, Parquet, npz or an image folder) and trains on it.

    Args:
        input_uri: File, folder, pattern or gs:// URI of the labelled input data.
        label: Label column (images: the class folder).
        keys: Passthrough key columns carried into predictions.
        eval_fraction: Share of rows held out for evaluation.
        compression: TFRecord compression: none or gzip.
        model_name: mlp, cnn, resnet50 or mobilenet_v2.
        model_fn: package.module:function building a custom tf_keras model.
        hidden_units: Comma-separated dense layer sizes.
        strategy: default, one_device, mirrored, multi_worker_mirrored, parameter_server, tpu.
        workers: Worker processes for the multi-process strategies.
        parameter_servers: Parameter servers for parameter_server.
        epochs: Training epochs.
        batch_size: Per-replica batch size.
        learning_rate: Optimizer learning rate.
        precision: float32, mixed_float16 or mixed_bfloat16.
        checkpoint_dir: URI for checkpoints that survive a rerun; empty for none.
        target_accuracy: Eval accuracy whose first crossing is timed.
    """
    data = shard_tfrecords(input_uri=input_uri, label=label, keys=keys,
                           eval_fraction=eval_fraction, compression=compression)
    data.set_display_name("shard")
    trained = train(dataset=data.outputs["dataset"], model_name=model_name, model_fn=model_fn,
                    hidden_units=hidden_units, strategy=strategy, workers=workers,
                    parameter_servers=parameter_servers, epochs=epochs, batch_size=batch_size,
                    learning_rate=learning_rate, precision=precision,
                    checkpoint_dir=checkpoint_dir, target_accuracy=target_accuracy)
    trained.set_cpu_request(TRAIN_CPU).set_memory_request(TRAIN_MEMORY)
    return trained.outputs["model"]
