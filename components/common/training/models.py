"""The built-in model families, and the user's ``model_fn`` hook.

Every model takes a dict of feature tensors named as the schema's feature columns (images
decoded to float32 [0, 1]) and returns what its task's head gives (tasks.py): class
probabilities, or the label's value. Preprocessing lives inside the model (normalisation from
statistics of a sample, string lookups, the regression label's scale), so the exported
SavedModel serves raw features and answers in the label's units. Built with tf_keras: Keras 3
cannot train under the multi-worker and
parameter-server strategies.
"""

from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.training import tasks
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError, load_model_fn

MAX_STRING_TOKENS = 100
MIN_APPLICATION_SIZE = 32  # keras.applications need at least 32x32 inputs


def build_model(config: TrainConfig, schema: Schema, sample: Dict[str, np.ndarray],
                task=None):
    """The model the config names, for the schema; ``sample`` feeds normalisation stats and
    ``task`` (tasks.Classification or Regression) gives the head; default: the label's
    classes."""
    import tf_keras

    task = task or tasks.Classification(len(schema.label.vocabulary))
    if config.model_fn:  # given the number of outputs: classes, or 1 for a regressor
        model = load_model_fn(config.model_fn)(schema, task.outputs())
        if not isinstance(model, tf_keras.Model):
            raise TrainConfigError(f"model_fn {config.model_fn!r} returned "
                                   f"{type(model).__name__}, not a tf_keras.Model")
        return model
    # Keyed by the column's own name (the data's); every Keras name is built from its tensor
    # name and holds '__', so it is valid in TensorFlow and no other layer has it.
    inputs = {c.name: tf_keras.Input(shape=_input_shape(c), name=f"input__{c.tensor}",
                                     dtype=_dtype(c))
              for c in schema.features}
    images = [c for c in schema.features if c.encoding == "image"]
    others = [c for c in schema.features if c.encoding != "image"]
    if config.model_name == "mlp":
        x = _tabular(inputs, schema.features, sample)
    else:
        if len(images) != 1:
            raise TrainConfigError(
                f"model {config.model_name!r} needs exactly one image feature column; the schema "
                f"has {[c.name for c in images]}")
        x = _image_tower(config.model_name, inputs[images[0].name], images[0])
        if others:
            x = tf_keras.layers.Concatenate()([x, _tabular(inputs, others, sample)])
    for units in config.hidden_units:
        x = tf_keras.layers.Dense(units, activation="relu")(x)
    return tf_keras.Model(inputs, task.head(x), name=config.model_name)


def task_for(config: TrainConfig, schema: Schema):
    """(the schema the task reads the data with, the task object): the task resolved from
    the label and ``config.task``, with a regressor's label statistics from a sample."""
    name = tasks.resolve(schema, config.task)
    schema = tasks.training_schema(schema, name)
    labels = (sample_labels(config.dataset, schema) if tasks.TASK_OBJECTS[name].samples_labels
              else None)
    return schema, tasks.make(name, schema, labels, config.loss)


def compiled_model(config: TrainConfig, schema: Schema, strategy, task=None):
    """The model, optimizer and loss exactly as train uses them, built under ``strategy``
    (diagnose_bottleneck builds the same one to measure it). ``schema`` and ``task`` are
    task_for's; without ``task``, task_for's own."""
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset

    if task is None:
        schema, task = task_for(config, schema)
    sample = sample_features(config.dataset, schema)
    with strategy.scope():
        model = build_model(config, schema, sample, task)
        if not model.built:  # a subclassed model from model_fn makes its weights when called
            features, _ = next(iter(make_dataset(config.dataset, schema, batch_size=2,
                                                 shuffle=False, max_rows=2)))
            model(features)
        optimizer = {"adam": tf_keras.optimizers.Adam, "sgd": tf_keras.optimizers.SGD,
                     "rmsprop": tf_keras.optimizers.RMSprop}[config.optimizer](
                         learning_rate=config.learning_rate)
        model.compile(optimizer=optimizer, **task.compile_args(), jit_compile=config.jit_compile,
                      steps_per_execution=config.steps_per_execution)
        model.optimizer.build(model.trainable_variables)  # so a checkpoint restores its slots
    return model


def _input_shape(col: Column):
    return tuple(col.image_shape) if col.encoding == "image" else tuple(col.shape)


def _dtype(col: Column) -> str:
    return "float32" if col.encoding == "image" else col.dtype


def _tabular(inputs, columns: List[Column], sample: Dict[str, np.ndarray]):
    """Numbers normalised, strings one-hot over the sample's most frequent values, images
    flattened; all concatenated."""
    import tensorflow as tf
    import tf_keras

    parts = []
    for col in columns:
        x = inputs[col.name]
        if col.dtype == "string" and col.encoding != "image":
            lookup = tf_keras.layers.StringLookup(
                vocabulary=_top_strings(sample[col.name]), output_mode="one_hot",
                name=f"{col.tensor}__lookup")
            # one column per row: a rank-1 batch of one row would one-hot to [vocab], not
            # [1, vocab] (a shard whose last batch holds one row failed the concatenation)
            rows = tf_keras.layers.Reshape((1,), name=f"{col.tensor}__rows")(x)
            parts.append(tf_keras.layers.Flatten()(lookup(rows)))
            continue
        # Preprocessing stays in float32 under a mixed precision policy (bfloat16 keeps 8
        # bits of a raw value); the first Dense layer casts to the compute dtype.
        x = tf_keras.layers.Flatten(dtype="float32")(tf_keras.layers.Lambda(
            lambda t: tf.cast(t, tf.float32), name=f"{col.tensor}__float", dtype="float32")(x))
        if col.encoding != "image":
            mean, variance = gap_free_moments(sample[col.name])
            if col.dtype == "float32":  # only floats carry gaps (common.data.missing)
                x = _imputed(x, mean.astype(np.float32), col.tensor)
            x = tf_keras.layers.Normalization(mean=mean, variance=variance + 1e-6,
                                              name=f"{col.tensor}__norm", dtype="float32")(x)
        parts.append(x)
    return parts[0] if len(parts) == 1 else tf_keras.layers.Concatenate()(parts)


def gap_free_moments(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per-element mean and variance over the rows without a gap (NaN); 0 and 1 for an
    element that is always missing."""
    flat = np.asarray(values, np.float64).reshape(len(values), -1)
    present = ~np.isnan(flat)
    count = present.sum(axis=0)
    filled = np.where(present, flat, 0.0)
    mean = np.where(count > 0, filled.sum(axis=0) / np.maximum(count, 1), 0.0)
    spread = np.where(present, (flat - mean) ** 2, 0.0).sum(axis=0)
    variance = np.where(count > 0, spread / np.maximum(count, 1), 1.0)
    return mean, variance


def _imputed(x, fill: np.ndarray, tensor: str):
    """Gaps (NaN) replaced by ``fill`` inside the model, so raw rows with gaps predict.
    ``x != x`` is NaN's test in TFLite builtins (NOT_EQUAL, SELECT_V2) as well as in TF."""
    import tensorflow as tf
    import tf_keras

    return tf_keras.layers.Lambda(lambda t: tf.where(tf.not_equal(t, t), fill, t),
                                  name=f"{tensor}__impute", dtype="float32")(x)


def _top_strings(values: np.ndarray) -> List[str]:
    """The most frequent strings; the empty string is a gap, left out-of-vocabulary."""
    flat = np.asarray(values).reshape(-1)
    flat = flat[(flat != b"") & (flat != "")]
    tokens, counts = np.unique(flat, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:MAX_STRING_TOKENS]
    return sorted(t.decode() if isinstance(t, bytes) else str(t) for t in tokens[order])


def _image_tower(name: str, image, col: Column):
    import tf_keras

    height, width, channels = col.image_shape
    if name == "cnn":
        x = tf_keras.layers.Conv2D(32, 3, padding="same", activation="relu")(image)
        x = tf_keras.layers.MaxPooling2D()(x)
        x = tf_keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
        return tf_keras.layers.GlobalAveragePooling2D()(x)
    size = (max(height, MIN_APPLICATION_SIZE), max(width, MIN_APPLICATION_SIZE))
    x = tf_keras.layers.Resizing(*size)(image) if size != (height, width) else image
    application = {"resnet50": tf_keras.applications.ResNet50,
                   "mobilenet_v2": tf_keras.applications.MobileNetV2}[name]
    base = application(include_top=False, weights=None, input_shape=(*size, channels),
                       pooling="avg")
    return base(x * 2.0 - 1.0)  # both expect inputs centred on zero


def sample_features(data: str, schema: Schema, rows: int = 10_000) -> Dict[str, np.ndarray]:
    """Up to ``rows`` training examples as NumPy arrays, for normalisation statistics."""
    return _sample(data, schema, rows)[0]


def sample_labels(data: str, schema: Schema, rows: int = 10_000) -> np.ndarray:
    """The labels of the same rows sample_features takes (a regressor's label scale)."""
    return _sample(data, schema, rows)[1]


def _sample(data: str, schema: Schema, rows: int):
    from tfkfp.components.common.data.reader import make_dataset

    batches = make_dataset(data, schema, mode="train", batch_size=1024, shuffle=False,
                           max_rows=rows)
    columns: Dict[str, list] = {c.name: [] for c in schema.features}
    labels, seen = [], 0
    for features, label in batches:
        for name, values in features.items():
            columns[name].append(values.numpy())
        labels.append(label.numpy())
        seen += len(labels[-1])
        if seen >= rows:
            break
    return ({name: np.concatenate(parts)[:rows] for name, parts in columns.items()},
            np.concatenate(labels)[:rows] if labels else np.zeros(0))
