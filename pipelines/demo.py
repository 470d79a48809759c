"""The main job on the built-in demo data: the ``training`` pipeline, run locally."""

import os
import time
from typing import Any, Dict

DEMO_PARAMETERS = {"keys": ["id"], "epochs": 5, "target_accuracy": 0.95}


def run_demo(out_dir: str) -> Dict[str, Any]:
    """Write the digits, run ``training`` on them with the local runner, print a summary."""
    from tfkfp.components.common.demo_data import write_demo_data
    from tfkfp.pipelines import local_run

    data = write_demo_data(os.path.join(out_dir, "data"))
    print(f"demo data: {data.rows} digits in {data.csv}")
    root = os.path.join(out_dir, "pipeline_root")
    started = time.monotonic()
    task = local_run.run_local("training", {"input_uri": os.path.abspath(data.csv),
                                            **DEMO_PARAMETERS}, root)
    outputs = local_run.outputs_of(task)
    print(f"\npipeline 'training' finished in {time.monotonic() - started:.0f} s\n")
    print("\n".join(summary(outputs)))
    print(f"\neverything the run wrote is under {os.path.abspath(root)}")
    return outputs


def summary(outputs: Dict[str, Any]) -> list:
    model, tflite, predictions = outputs["model"], outputs["tflite"], outputs["predictions"]
    meta = model.metadata
    tflite_file = os.path.join(tflite.path, "model.tflite")
    lines = [
        f"eval accuracy         {meta['eval_accuracy']:.4f} (SavedModel), "
        f"{tflite.metadata.get('accuracy', float('nan')):.4f} (TFLite)",
        f"training throughput   {meta['examples_per_second']:,.0f} examples/s",
        f"SavedModel            {directory_bytes(model.path) / 1e6:.2f} MB  {model.path}",
        f"TFLite model          {os.path.getsize(tflite_file) / 1e6:.3f} MB  {tflite_file}",
        f"predictions           {predictions.metadata.get('predictions', 0):.0f} rows at "
        f"{predictions.metadata.get('records_per_second', 0):,.0f} rows/s  {predictions.path}"]
    if "seconds_to_target" in meta:
        lines.insert(1, f"time to {DEMO_PARAMETERS['target_accuracy']:.0%} accuracy    "
                        f"{meta['seconds_to_target']:.1f} s of training")
    return lines


def directory_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f))
               for folder, _, files in os.walk(path) for f in files)
