"""Scenario: bring your own SavedModel to the edge, InceptionV3 against plain TFLiteConverter.

``tf_keras.applications.InceptionV3(weights=None)`` is saved with ``tf.saved_model.save`` (a
plain SavedModel: one ``serving_default`` input, no tfkfp assets). Images written here are
sharded by shard_tfrecords; freeze_quantize, the core of the ``edge_export`` pipeline's first
step, binds the single image column to the model's input and runs its ``auto`` sweep with the
default modes for a CNN (float, dynamic, float16, int8 calibrated on the train split; the
default leaves int16x8 out, LiteRT's int16 reference kernels take seconds per InceptionV3
image on 2 cores). With random weights int8's outputs are all zeros: the gate refuses it as
constant and the report says so; its size is measured all the same. In the same run, plain
``tf.lite.TFLiteConverter`` converts the same SavedModel in the same modes, int8 with the
same calibration images. Sizes are compared; the target is int8 at least 74% smaller than
float, as in the published headline (Inception v3, 91 MB -> 23 MB).

``python -m benchmarks --only edge`` (``--quick``: 96x96 images resized by the binding, fewer
calibration images; ``--smoke``: a two-layer CNN on 32x32 images in InceptionV3's place).
"""

import logging
import os
import time
from typing import Dict, List

import numpy as np

from benchmarks.harness import Record, load_average
from benchmarks.quantization import AtMost

INT8_TARGET = 0.26  # int8 size / float size, at most (>= 74% smaller)
MODES = ("none", "dynamic", "float16", "int8")
SMOKE_SIZE = 32  # a smoke run's image side


def write_images(folder: str, count: int, size: int) -> None:
    """Smooth random RGB images (gradients plus noise) in two class folders, as PNG."""
    from PIL import Image

    rng = np.random.default_rng(7)
    ramp = np.linspace(0.0, 1.0, size)
    for i in range(count):
        label = str(i % 2)
        os.makedirs(os.path.join(folder, label), exist_ok=True)
        angle = rng.uniform(0, np.pi)
        plane = np.cos(angle) * ramp[None, :] + np.sin(angle) * ramp[:, None]
        pixels = np.stack([plane * rng.uniform(0.3, 1.0) for _ in range(3)], axis=-1)
        pixels = np.clip(pixels + rng.normal(0, 0.05, pixels.shape), 0, 1)
        Image.fromarray((255 * pixels).astype(np.uint8)).save(
            os.path.join(folder, label, f"{i:04d}.png"))


def save_inception(path: str, smoke: bool = False) -> int:
    """InceptionV3 (or for a smoke run a small CNN with an image input as well) saved as a
    plain SavedModel; its parameter count."""
    import tensorflow as tf
    import tf_keras

    if smoke:
        layers = tf_keras.layers
        model = tf_keras.Sequential([
            layers.Input((SMOKE_SIZE, SMOKE_SIZE, 3)), layers.Conv2D(8, 3, activation="relu"),
            layers.GlobalAveragePooling2D(), layers.Dense(10, activation="softmax")])
    else:
        model = tf_keras.applications.InceptionV3(weights=None)
    tf.saved_model.save(model, path)
    return model.count_params()


def plain_converter(model_dir: str, calibration: Dict[str, np.ndarray]) -> Dict[str, int]:
    """Sizes from TFLiteConverter alone, as a user without tfkfp would convert."""
    import tensorflow as tf

    sizes = {}
    for mode in MODES:
        converter = tf.lite.TFLiteConverter.from_saved_model(model_dir)
        if mode != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if mode == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if mode == "int8":
            def representative():
                for values in zip(*calibration.values()):
                    yield {n: v[None] for n, v in zip(calibration, values)}

            converter.representative_dataset = representative
        started = time.monotonic()
        sizes[mode] = len(converter.convert())
        print(f"  plain TFLiteConverter {mode}: {sizes[mode]:,} bytes "
              f"({time.monotonic() - started:.0f}s)", flush=True)
    return sizes


def run(work: str, quick: bool = False, smoke: bool = False) -> List[Record]:
    from tfkfp.components.common.tflite import binding as tflite_binding
    from tfkfp.components.common.tflite import inputs as tflite_inputs
    from tfkfp.components.common.tflite.parity import Timing
    from tfkfp.components.freeze_quantize.core import freeze_quantize
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    images, dataset = os.path.join(work, "edge-images"), os.path.join(work, "edge-dataset")
    calibration_examples = 4 if smoke else 8 if quick else 32
    write_images(images, 3 * calibration_examples,
                 SMOKE_SIZE if smoke else 96 if quick else 299)
    shard_tfrecords(images, dataset, eval_fraction=0.25)
    model_dir = os.path.join(work, "inception-v3")
    print("saving InceptionV3 (weights=None) with tf.saved_model.save", flush=True)
    params = save_inception(model_dir, smoke)
    started = time.monotonic()
    result = freeze_quantize(model_dir, dataset, os.path.join(work, "edge-tflite"),
                             os.path.join(work, "edge-frozen"), quantization="auto",
                             max_accuracy_drop=1.0, calibration_examples=calibration_examples,
                             eval_examples=8, timing=Timing(4, 2))
    assert tuple(f.mode for f in result.figures) == MODES, result.skipped  # the CNN default
    print(f"\nInceptionV3 ({params:,} parameters) through freeze_quantize, signature "
          f"{result.signature!r}, inputs {result.input_columns}: "
          f"{time.monotonic() - started:.0f}s\n{result.markdown()}", flush=True)
    for mode, why in result.not_chosen().items():
        print(f"  the gate refused {mode}: {why}", flush=True)
    _, fn, signature = tflite_inputs.load_model(model_dir)
    binding = tflite_binding.bind(fn, signature, tflite_inputs.dataset_schema(dataset),
                                  dataset)
    calibration = tflite_inputs.load_examples(dataset, "train", calibration_examples, binding,
                                              "calibration").features
    plain = plain_converter(model_dir, calibration)
    ours = {f.mode: f.size_bytes for f in result.figures}
    load = load_average()
    records = [AtMost(f"edge_inception_{mode}", "bytes", ours[mode], "plain TFLiteConverter",
                      plain[mode], None, load) for mode in MODES]
    records.append(AtMost("edge_inception_int8", "int8 / float (ours)", ours["int8"],
                          "float TFLite (ours)", ours["none"], INT8_TARGET, load))
    records.append(AtMost("edge_inception_int8", "int8 / float (plain)", plain["int8"],
                          "float TFLite (plain)", plain["none"], INT8_TARGET, load))
    for name, sizes in (("ours", ours), ("plain TFLiteConverter", plain)):
        print(f"{name}: float {sizes['none'] / 1e6:.1f} MB -> int8 {sizes['int8'] / 1e6:.1f} MB "
              f"({100 * (1 - sizes['int8'] / sizes['none']):.1f}% smaller)")
    return records
