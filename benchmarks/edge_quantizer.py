"""Scenario: LiteRT Quantizer (``litert-quantizer``, formerly ``ai-edge-quantizer``) against
the converter's own quantization, which freeze_quantize and export_tflite use.

The quantizer takes a converted float32 ``.tflite`` and rewrites it (recipes
``dynamic_wi8_afp32``: int8 weights, float activations; ``static_wi8_ai8``: int8 weights and
activations, calibrated); the converter quantizes while it converts the SavedModel (modes
``dynamic`` and ``int8``, int8 through freeze_quantize's route, which keeps a packed block's
normalisation in float). Both start from the same model, calibrate on the same examples and
are measured by the same gate figures (common.tflite.parity: accuracy against the
SavedModel's, top-1 agreement) in LiteRT. Time: the converter's whole conversion against the
quantizer's calibration and rewrite of the float file (which the sweep converts anyway),
medians of ``repeats`` runs. Two models: the breast-cancer table's MLP in the packed layout
(benchmarks.edge_table) and a small CNN trained here on the demo digits as 8x8 images. Its
per-tensor validation is tried on each quantized model.

Needs the quantizer, which tfkfp does not depend on: ``pip install litert-quantizer==0.11.0``.
``python -m benchmarks --only edge_quantizer``.
"""

import logging
import os
import statistics
import time
from functools import partial
from typing import Callable, Dict, List

import numpy as np

from benchmarks.harness import load_average
from benchmarks.quantization import AtMost, DropRecord

PAIRS = (("dynamic", "dynamic_wi8_afp32"), ("int8", "static_wi8_ai8"))


def quantizer_module():
    try:
        from litert_quantizer import quantizer
    except ImportError as err:
        raise SystemExit("the edge_quantizer scenario needs LiteRT Quantizer: pip install "
                         "litert-quantizer==0.11.0") from err
    return quantizer


def quantize(float_content: bytes, recipe_name: str, signature: str,
             calibration: List[Dict[str, np.ndarray]]) -> bytes:
    """The float model rewritten by LiteRT Quantizer with one of its recipes (calibrated on
    ``calibration``, one example per dict, when the recipe needs it)."""
    from litert_quantizer import calibrator, recipe

    quantizer = quantizer_module()
    qt = quantizer.Quantizer(float_content)
    qt.load_quantization_recipe(getattr(recipe, recipe_name)())
    qsvs = None
    if qt.need_calibration:
        qsvs = qt.calibrate({signature: calibration}, num_threads=os.cpu_count() or 1,
                            mode=calibrator.CalibrationMode.CALIBRATION_PROFILER_BASED)
    return bytes(qt.quantize(qsvs, enable_progress_report=False).quantized_model)


def validation_outcome(float_content: bytes, quantized: bytes, signature: str,
                       examples: List[Dict[str, np.ndarray]]) -> str:
    """The quantizer's per-tensor validation of a quantized model, in a child process (it
    crashed the process on the CNN): its worst tensor by mean squared error, or why not."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        try:
            return pool.submit(_validate, float_content, quantized, signature,
                               examples).result()
        except BrokenProcessPool:
            return "failed: the validating process died (a crash inside LiteRT)"


def _validate(float_content: bytes, quantized: bytes, signature: str,
              examples: List[Dict[str, np.ndarray]]) -> str:
    quantizer = quantizer_module()
    try:
        found = quantizer.Quantizer(float_content, previous_quantized_model=quantized).validate(
            test_data={signature: examples}, num_threads=os.cpu_count() or 1)
    except Exception as err:  # noqa: BLE001 (its failure, whatever it is, is the finding)
        return f"failed: {type(err).__name__}: {str(err)[:120]}"
    tensors = found.get_all_tensor_results()
    worst = max(tensors, key=lambda name: max(tensors[name].values()))
    return f"{len(tensors)} tensors, worst {worst} (MSE {max(tensors[worst].values()):.3g})"


class Case:
    """One model as freeze_quantize sees it: its float TFLite, calibration and gate."""

    def __init__(self, name: str, model_dir: str, dataset: str, calibration_examples: int):
        from tfkfp.components.common.tflite import binding as tflite_binding
        from tfkfp.components.common.tflite import convert as tflite_convert
        from tfkfp.components.common.tflite import inputs as tflite_inputs
        from tfkfp.components.common.tflite import packing as tflite_packing

        self.name, self.model_dir = name, model_dir
        self.loaded, fn, self.signature = tflite_inputs.load_model(model_dir)
        self.fn = fn
        schema = tflite_inputs.dataset_schema(dataset)
        binding = tflite_binding.bind(fn, self.signature, schema, dataset)
        self.reading = binding.reading
        self.packing = tflite_packing.for_binding(fn, binding, schema, "packed")
        self.prepared = tflite_convert.prepare(fn)
        self.fills = self.packing.fills(self.prepared.feeding.fills)
        examples = tflite_inputs.load_examples(dataset, "eval", 1000, binding, "evaluation")
        self.reference = tflite_inputs.reference_outputs(fn, examples)
        self.examples = tflite_packing.pack_examples(self.packing, examples)
        calibration = tflite_inputs.load_examples(dataset, "train", calibration_examples,
                                                  binding, "calibration")
        self.calibration = self.packing.feed(calibration.features)
        self.representative = tflite_convert.representative_dataset(
            self.calibration, self.fills, calibration.batch)

    def calibration_rows(self) -> List[Dict[str, np.ndarray]]:
        from tfkfp.components.common.data import missing

        feed = {n: missing.fill_gaps(v, self.fills.get(n)) for n, v in self.calibration.items()}
        count = len(next(iter(feed.values())))
        return [{n: v[i:i + 1] for n, v in feed.items()} for i in range(count)]

    def convert(self, mode: str) -> bytes:
        from tfkfp.components.common.tflite import convert as tflite_convert

        with tflite_convert.convertible(self.model_dir, self.signature, self.fn,
                                        self.prepared, self.packing) as source:
            return tflite_convert.convert(self.model_dir, self.signature, mode,
                                          self.representative, source=source,
                                          packed=bool(self.packing))

    def figures(self, mode: str, content: bytes):
        from tfkfp.components.common.tflite import parity

        return parity.compare(mode, content, self.signature, self.examples, self.reference,
                              None, self.fills, self.reading)


def timed(make: Callable[[], bytes], repeats: int):
    """(the last result, median seconds of ``repeats`` runs)."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        out = make()
        seconds.append(time.perf_counter() - started)
    return out, statistics.median(seconds)


def compare(case: Case, repeats: int) -> List:

    float_content = case.convert("none")
    rows = case.calibration_rows()
    load, records = load_average(), []
    for mode, recipe_name in PAIRS:
        ours, ours_s = timed(partial(case.convert, mode), repeats)
        theirs, theirs_s = timed(
            partial(quantize, float_content, recipe_name, case.signature, rows), repeats)
        found = []
        for who, content, seconds in (("converter " + mode, ours, ours_s),
                                      ("quantizer " + recipe_name, theirs, theirs_s)):
            found.append(case.figures(mode, content))
            _print(case.name, who, content, seconds, found[-1])
        print(f"  {'':<13}quantizer's validation: "
              f"{validation_outcome(float_content, theirs, case.signature, rows[:20])}",
              flush=True)
        scenario, (a, b) = f"quantizer_{case.name}", found
        records += [
            AtMost(scenario, f"{mode} bytes", len(theirs), "converter", len(ours), None, load),
            AtMost(scenario, f"{mode} ms", 1000 * theirs_s, "converter", 1000 * ours_s, None,
                   load),
            DropRecord(scenario, f"{mode} accuracy %", 100 * (b.accuracy or 0.0), "converter",
                       100 * (a.accuracy or 0.0), None, load)]
    return records


def _print(case: str, who: str, content: bytes, seconds: float, figures) -> None:
    from tfkfp.components.common.tflite import parity

    refused = "; ".join(parity.failures(figures, parity.Gate())) or "passed"
    print(f"  {case:<13}{who:<30}{len(content):>11,} B  accuracy {_num(figures.accuracy)} "
          f"(SavedModel {_num(figures.reference_accuracy)})  agreement "
          f"{_num(figures.agreement)}  {seconds:7.2f}s  gate: {refused[:90]}", flush=True)


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def digits_cnn(work: str) -> tuple:
    """The demo digits as 8x8 PNGs and tfkfp's small CNN trained on them."""
    from tfkfp.components.common.data.demo_data import write_demo_data
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.train.core import train

    demo = write_demo_data(os.path.join(work, "eq-demo"))
    dataset = shard_tfrecords(demo.images, os.path.join(work, "eq-digits")).dataset
    model = os.path.join(work, "eq-cnn")
    train(dataset, model, model_name="cnn", epochs=8, seed=1)
    return model, dataset


def breast_cancer_mlp(work: str) -> tuple:
    from benchmarks.edge_table import write_table
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords
    from tfkfp.components.train.core import train

    dataset = shard_tfrecords(write_table(work), os.path.join(work, "eq-bc"),
                              label="target", keys=["id"]).dataset
    model = os.path.join(work, "eq-bc-model")
    train(dataset, model, epochs=5, seed=1)
    return model, dataset


def run(work: str, repeats: int) -> List:
    quantizer_module()  # refuse before any work when it is missing
    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    logging.getLogger("absl").setLevel(logging.ERROR)
    records = []
    for name, build in (("table", breast_cancer_mlp), ("digits_cnn", digits_cnn)):
        model, dataset = build(work)
        records += compare(Case(name, model, dataset, 100), repeats)
    return records
