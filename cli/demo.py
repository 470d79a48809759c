"""The main job on the built-in demo data: the ``training`` pipeline, run locally."""

import os
from typing import Any, Dict, List

from tfkfp.cli import figures

DEMO_PARAMETERS = {"label": "label", "keys": ["id"], "epochs": 5, "target_metric": "accuracy",
                   "target_value": 0.95}


def run_demo(out_dir: str, verbose: bool = False) -> Dict[str, Any]:
    """Write the digits, run ``training`` on them with the local runner, print a summary."""
    from tfkfp.cli import local_run
    from tfkfp.components.common.data.demo_data import write_demo_data

    data = write_demo_data(os.path.join(out_dir, "data"))
    print(f"demo data: {data.rows} digits in {data.csv}")
    root = os.path.join(out_dir, "pipeline_root")
    run = local_run.run_local("training", {"input_uri": os.path.abspath(data.csv),
                                           **DEMO_PARAMETERS}, root, verbose)
    print(f"\npipeline {run.name!r} finished in {run.seconds:.0f} s\n")
    print("\n".join(summary(run)))
    print(f"\neverything the run wrote is under {local_run.shown_folder(run.run_dir)}")
    print(f"every task's log is under {local_run.shown_folder(run.log_dir)}")
    return run.outputs


def summary(run) -> List[str]:
    """The demo's figures; rates are the steps' own throughput, wall times beside them."""
    from tfkfp.components.common.model.bundle import MODEL_FILE

    model, tflite, predictions = (run.outputs[n] for n in ("model", "tflite", "predictions"))
    meta, lite = model.metadata, tflite.metadata
    tflite_file = os.path.join(tflite.path, MODEL_FILE)
    lines = [
        f"eval accuracy         {meta['eval_accuracy']:.4f} (SavedModel), "
        f"{lite.get('accuracy', float('nan')):.4f} (TFLite)",
        f"training throughput   {meta['examples_per_second']:,.0f} examples/s "
        f"({_wall(run, model)} step wall time)",
        _quantization(run, lite),
        f"SavedModel            {directory_bytes(model.path) / 1e6:.2f} MB  "
        f"{_in_run(run, model.path)}",
        f"TFLite model          {os.path.getsize(tflite_file) / 1e6:.3f} MB  "
        f"{_in_run(run, tflite_file)}",
        *_predictions(run, predictions)]
    if "seconds_to_target" in meta:
        label = f"time to {DEMO_PARAMETERS['target_value']:.0%} accuracy"
        lines.insert(1, f"{label:<22}{meta['seconds_to_target']:.1f} s of training")
    return lines


def _quantization(run, lite: Dict[str, Any]) -> str:
    """The mode freeze_quantize chose (and of how many tried), its size and accuracy."""
    chosen = next((t for t in run.tasks if figures.step_of(t.name) == "freeze-quantize"
                   and t.outputs), None)
    tried = chosen.outputs["tflite_model"].metadata.get("modes", {}) if chosen else {}
    how = f"best of {len(tried)} modes tried" if len(tried) > 1 else "as asked"
    drop = 100 * lite.get("accuracy_drop", float("nan"))
    return (f"quantization          {lite.get('mode', '?')} ({how}): "
            f"{lite.get('size_bytes', 0) / 1e6:.3f} MB, accuracy "
            f"{lite.get('accuracy', float('nan')):.4f} (drop {drop:.2f} points)")


def _predictions(run, predictions) -> List[str]:
    meta = predictions.metadata
    rate = meta.get("records_per_second", 0)
    return [f"predictions           {meta.get('predictions', 0):,.0f} rows at "
            f"{figures.human(rate)} rows/s reading, predicting and writing "
            f"({_wall(run, predictions)} step wall time)",
            f"{'':22}{_in_run(run, predictions.path)}"]


def _in_run(run, path: str) -> str:
    """A path in the run folder, relative to it (the last lines name the folder)."""
    relative = os.path.relpath(path, run.run_dir)
    return path if relative.startswith("..") else relative


def _wall(run, artifact) -> str:
    task = run.task_of(artifact)
    return f"{task.seconds:.0f} s" if task else "?"


def directory_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f))
               for folder, _, files in os.walk(path) for f in files)
