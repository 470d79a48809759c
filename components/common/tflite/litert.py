"""Running a .tflite model in LiteRT (``ai-edge-litert``), the runtime that apps ship with.

``tf.lite.Interpreter`` is deprecated; everything here uses
``ai_edge_litert.interpreter.Interpreter`` and signature runners, so inputs and outputs are
addressed by the names of the SavedModel signature the model was converted from. Quantized
inputs (int8/int16 with a scale) are quantized from float on the way in and quantized
outputs dequantized on the way out, so callers always see real values. Given the model's
fills (common.tflite.feeding), a gap (NaN) in a float input is replaced by its fill before
quantizing: a NaN does not survive a QUANTIZE op or an int8 input.
"""

import math
from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.data.missing import fill_gaps
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import threads_or_cpus
from tfkfp.components.common.tflite.budget import NO_DEADLINE, Deadline, Timed, time_calls
from tfkfp.components.common.tflite.inputs import fixed_batches


class LiteRTError(ValueError):
    """A .tflite model that cannot be loaded or run as asked."""


def load_interpreter(model: str | bytes, num_threads: int = 0):
    """A LiteRT interpreter for a .tflite path/URI or the model's bytes.

    Args:
        model: a path or URI of a .tflite file, or its content.
        num_threads: CPU threads for the interpreter; 0 uses one per CPU of the container.
    """
    from ai_edge_litert.interpreter import Interpreter

    content = model
    if isinstance(model, str):
        if not uris.exists(model):
            raise LiteRTError(f"no .tflite model at {model}")
        with uris.open_file(model, "rb") as f:
            content = f.read()
    try:
        return Interpreter(model_content=content, num_threads=threads_or_cpus(num_threads))
    except ValueError as err:
        where = model if isinstance(model, str) else "the model bytes"
        raise LiteRTError(f"LiteRT cannot load {where}: {err}") from err


def signature_runner(interpreter, signature: str):
    """The runner of one signature, with an error that lists the signatures there are."""
    available = sorted(interpreter.get_signature_list())
    if signature not in available:
        raise LiteRTError(f"the .tflite model has no signature {signature!r}; it has "
                          f"{available}")
    return interpreter.get_signature_runner(signature)


def io_details(runner) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """Inputs and outputs of a signature: dtype, shape (-1 for any) and quantization."""
    def describe(details: Dict) -> Dict[str, Dict[str, Any]]:
        out = {}
        for name, d in sorted(details.items()):
            scale, zero_point = d["quantization"]
            dtype = np.dtype(d["dtype"])
            out[name] = {"dtype": "string" if dtype.kind in "SOU" else dtype.name,
                         "shape": [int(x) for x in d["shape_signature"]]}
            if scale:
                out[name]["quantization"] = {"scale": float(scale),
                                             "zero_point": int(zero_point)}
        return out

    return {"inputs": describe(runner.get_input_details()),
            "outputs": describe(runner.get_output_details())}


def run(runner, inputs: Dict[str, np.ndarray], batch_size: int = 256,
        fills: Dict[str, np.ndarray] | None = None,
        fixed_batch: int | None = None) -> Dict[str, np.ndarray]:
    """Run a signature over inputs in batches (of exactly ``fixed_batch`` rows for a model
    that fixes its batch size); quantized tensors are handled both ways and gaps (NaN) in an
    input with a fill are fed as the fill."""
    in_details = runner.get_input_details()
    missing = sorted(set(in_details) - set(inputs))
    extra = sorted(set(inputs) - set(in_details))
    if missing or extra:
        raise LiteRTError(f"the .tflite signature takes inputs {sorted(in_details)}; missing "
                          f"{missing}, unexpected {extra}")
    out_details = runner.get_output_details()
    parts: Dict[str, List[np.ndarray]] = {}
    for rows, real in fixed_batches(inputs, batch_size, fixed_batch):
        batch = {k: feed_value(v, in_details[k], (fills or {}).get(k)) for k, v in rows.items()}
        for name, value in runner(**batch).items():
            parts.setdefault(name, []).append(output_value(value, out_details[name])[:real])
    return {name: np.concatenate(values) for name, values in parts.items()}


def feed_value(values: np.ndarray, details: Dict, fill: np.ndarray | None = None) -> np.ndarray:
    """values as the input tensor takes them: gaps filled, quantized if it is quantized."""
    values = fill_gaps(values, fill)
    dtype = np.dtype(details["dtype"])
    scale, zero_point = details["quantization"]
    if scale and values.dtype.kind == "f" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = np.clip(np.round(values / scale + zero_point), info.min, info.max)
    return np.ascontiguousarray(values.astype(dtype, copy=False))


def output_value(values: np.ndarray, details: Dict) -> np.ndarray:
    scale, zero_point = details["quantization"]
    if scale and values.dtype.kind in "iu":
        return ((values.astype(np.float32) - zero_point) * scale).astype(np.float32)
    return np.array(values, copy=True)  # the runner's buffers are reused by the next call


def latency(runner, inputs: Dict[str, np.ndarray], batch_size: int, runs: int,
            fills: Dict[str, np.ndarray] | None = None, seconds: float = math.inf,
            deadline: Deadline = NO_DEADLINE, expected: float = 0.0) -> Timed:
    """Median seconds per call of the signature on the first batch_size examples, over up
    to ``runs`` calls made within ``seconds`` and before ``deadline`` (see
    common.tflite.budget.time_calls: the first call warms up)."""
    details = runner.get_input_details()
    batch = {k: feed_value(v[:batch_size], details[k], (fills or {}).get(k))
             for k, v in inputs.items()}
    return time_calls(lambda: runner(**batch), max(runs, 1), seconds, deadline, expected)
