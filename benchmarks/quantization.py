"""Scenario: quantization size, accuracy and LiteRT latency against the float32 anchors.

Two models on the demo digits: a >=1M-parameter MLP built here (its 64 inputs stacked into
one tensor, so weights dominate the file, as in Inception v3's published 91 MB -> 23 MB with
under a point of accuracy lost) and the shared demo MLP (~170k parameters, 64 reshaped
inputs). Each is frozen and converted in every mode by freeze_quantize; sizes and accuracy
are compared with the float32 TFLite model and the SavedModel. Then the int8 model in LiteRT
races the float SavedModel in TensorFlow on the same batches (interleaved, best of N).

``python -m benchmarks.quantization [--quick | --smoke] [--json PATH]``
"""

import dataclasses
import logging
import os
import sys
import tempfile
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.harness import KEPT, Record, best_rates, load_average, parse_options, report

SIZE_TARGET = 0.27  # int8 size / float32 size, at most
DROP_TARGET = 1.0  # accuracy drop of int8 vs the SavedModel in points, at most
SPEED_TARGET = 2.0  # int8 LiteRT examples/s over float SavedModel examples/s, batched
REFERENCE = "Inception v3: 91 MB -> 23 MB (0.25x, -75%), accuracy drop < 1 point"


@dataclasses.dataclass
class AtMost(Record):
    """A record whose ratio must stay at or below the target (sizes)."""

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.ratio <= self.target


@dataclasses.dataclass
class DropRecord(Record):
    """Accuracy in percent: met when ours is at most ``target`` points below the anchor."""

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.anchor_value - self.ours <= self.target + 1e-9


def build_model(schema, hidden: List[int], stacked: bool):
    """An MLP over the 64 pixel columns (stacked into one tensor, or reshaped one by one)."""
    import tensorflow as tf
    import tf_keras

    names = [c.name for c in schema.features]
    inputs = {n: tf_keras.Input(shape=(), name=n, dtype=tf.int64) for n in names}
    if stacked:
        x = tf_keras.layers.Lambda(lambda d: tf.cast(tf.stack([d[n] for n in names], axis=1),
                                                     tf.float32) / 16.0)(inputs)
    else:
        x = tf_keras.layers.Concatenate()([tf_keras.layers.Reshape((1,))(
            tf.cast(v, tf.float32) / 16.0) for v in inputs.values()])
    for units in hidden:
        x = tf_keras.layers.Dense(units, activation="relu")(x)
    outputs = tf_keras.layers.Dense(len(schema.label.vocabulary), activation="softmax")(x)
    return tf_keras.Model(inputs, outputs)


def train_and_export(dataset: str, out: str, hidden: List[int], stacked: bool,
                     epochs: int) -> int:
    import tf_keras

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema.load(dataset)
    tf_keras.utils.set_random_seed(3)
    model = build_model(schema, hidden, stacked)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(make_dataset(dataset, batch_size=64, seed=1), epochs=epochs, verbose=0)
    export_model(model, schema, out)
    return model.count_params()


def measure_modes(model_dir: str, dataset: str, work: str, name: str):
    from tfkfp.components.common.tflite.parity import Timing
    from tfkfp.components.freeze_quantize.core import freeze_quantize

    return freeze_quantize(model_dir, dataset, os.path.join(work, f"{name}-tflite"),
                           os.path.join(work, f"{name}-frozen"), quantization="auto",
                           max_accuracy_drop=1.0, timing=Timing(256, 10))


def print_modes(name: str, params: int, result) -> None:
    base = result.float_size
    print(f"\n{name}: {params:,} parameters, {result.chosen.examples} eval examples; "
          f"SavedModel accuracy {result.chosen.reference_accuracy:.4f}")
    print(f"  {'mode':<10}{'bytes':>12}{'vs f32':>8}{'accuracy':>10}{'drop pts':>10}"
          f"{'agree':>8}{'ms/ex':>8}{'ms/256':>8}")
    for f in result.figures:
        print(f"  {f.mode:<10}{f.size_bytes:>12,}{f.size_bytes / base:>7.3f}x"
              f"{f.accuracy:>10.4f}{100 * f.accuracy_drop:>+10.2f}{f.agreement:>8.4f}"
              f"{f.latency_example_ms:>8.3f}{f.latency_batch_ms:>8.2f}")
    print(f"  published reference: {REFERENCE}")


def latency_rates(model_dir: str, int8_dir: str, dataset: str, batch: int, calls: int,
                  repeats: int) -> Dict[str, float]:
    """Examples/s of int8 LiteRT and of the float SavedModel in TF, same batch, same data:
    the SavedModel takes a tensor per column, the LiteRT model its inputs as its
    quantization.json lays them out (the columns packed into blocks by default)."""
    import tensorflow as tf

    from tfkfp.components.common.tflite import inputs as tflite_inputs
    from tfkfp.components.common.tflite import litert, quantized

    _, fn = tflite_inputs.load_signature(model_dir, "serving_raw")
    names = sorted(tflite_inputs.signature_inputs(fn))
    examples = tflite_inputs.load_examples(dataset, "eval", batch, names, "latency")
    feed = {k: v[:batch] for k, v in examples.features.items()}
    tensors = {k: tf.constant(v) for k, v in feed.items()}
    content, _, _, packing = quantized.read(int8_dir, "serving_raw")
    packed = packing.feed(feed)
    runner = litert.signature_runner(litert.load_interpreter(content), "serving_raw")

    def tflite() -> int:
        for _ in range(calls):
            runner(**packed)
        return calls * batch

    def savedmodel() -> int:
        for _ in range(calls):
            fn(**tensors)
        return calls * batch

    tflite(), savedmodel()  # warm up both
    return best_rates({"int8 LiteRT": tflite, "float SavedModel (TF)": savedmodel}, repeats)


def run(work: str, repeats: int, quick: bool = False, smoke: bool = False) -> List[Record]:
    """The records of both models; ``smoke``: each a fraction of its size, one epoch, a few
    latency calls (the figures mean nothing)."""
    from tfkfp.components.common.data.demo_data import write_demo_data
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    data = write_demo_data(os.path.join(work, "quant-data"))
    dataset = os.path.join(work, "quant-dataset")
    shard_tfrecords(data.csv, dataset, label="label", keys=["id"])
    epochs = 1 if smoke else 4 if quick else 10
    shrink = 16 if smoke else 1
    records: List[Record] = []
    load = load_average()
    for name, hidden, stacked in [("mlp-1m", [1024, 1024], True),
                                  ("demo-mlp", [512, 256], False)]:
        hidden = [units // shrink for units in hidden]
        model_dir = os.path.join(work, f"{name}-model")
        print(f"training {name}", flush=True)
        params = train_and_export(dataset, model_dir, hidden, stacked, epochs)
        result = measure_modes(model_dir, dataset, work, name)
        print_modes(name, params, result)
        sizes = {f.mode: f.size_bytes for f in result.figures}
        int8 = next(f for f in result.figures if f.mode == "int8")
        target = SIZE_TARGET if name == "mlp-1m" else None
        records.append(AtMost(f"quant_size_{name}", "bytes", sizes["int8"],
                              "float32 TFLite", sizes["none"], target, load))
        records.append(AtMost(f"quant_size_{name}", "bytes (dynamic)", sizes["dynamic"],
                              "float32 TFLite", sizes["none"], None, load))
        records.append(DropRecord(f"quant_accuracy_{name}", "int8 accuracy %",
                                  100 * int8.accuracy, "float SavedModel accuracy %",
                                  100 * int8.reference_accuracy,
                                  DROP_TARGET if name == "mlp-1m" else None, load))
        if name == "mlp-1m":
            int8_dir = os.path.join(work, "mlp-1m-int8")
            _convert_int8(model_dir, dataset, int8_dir)
            for batch, calls in [(1, 20 if smoke else 200 if quick else 500),
                                 (256, 2 if smoke else 10 if quick else 30)]:
                print(f"latency, batch {batch}", flush=True)
                rates = latency_rates(model_dir, int8_dir, dataset, batch, calls, repeats)
                records.append(Record(f"quant_latency_b{batch}", "examples/s",
                                      rates["int8 LiteRT"], "float SavedModel in TF",
                                      rates["float SavedModel (TF)"],
                                      SPEED_TARGET if batch > 1 else None, load))
    return records


def _convert_int8(model_dir: str, dataset: str, out: str) -> None:
    from tfkfp.components.freeze_quantize.core import freeze_quantize

    freeze_quantize(model_dir, dataset, out, out + "-frozen", quantization="int8",
                    max_accuracy_drop=1.0)


def main(argv=None) -> int:
    args = parse_options("python -m benchmarks.quantization", argv, "fewer epochs, 2 repeats",
                         kept=KEPT["best"], json=True)
    print(f"quantization benchmark; best of {args.repeats}; {os.cpu_count()} cores; load "
          f"average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-quant-") as work:
        records = run(work, args.repeats, quick=args.quick, smoke=args.smoke)
    return report(records, args.smoke, args.json,
                  note="(size rows: met when ratio <= target; accuracy rows: met when the drop "
                  f"is at most {DROP_TARGET:g} point; latency rows: met when ratio >= target)")


if __name__ == "__main__":
    sys.exit(main())
