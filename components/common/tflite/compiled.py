"""A converted model run through LiteRT's CompiledModel API, the gate's second runtime.

ai-edge-litert 2.x offers ``CompiledModel`` beside the classic ``Interpreter``
(common.tflite.litert). It is fed and read through ``TensorBuffer``s, which in
ai-edge-litert 2.3 hold float32, float16, int32, int8, uint8 and bool (``BUFFER_DTYPES``):

- an input of another dtype (int64 whole numbers of the ``columns`` layout, strings) cannot
  be fed, so such a model is checked by the Interpreter alone (``CompiledCheck.skipped``
  says which input);
- a string output (a classifier's ``classes``) has no buffer of its own ("Invalid buffer
  offset" creating one), yet a run needs one for every output: a host buffer sized from the
  Interpreter's longest string takes it, in LiteRT's string layout, read back here;
- an int64 output (``class_ids``) is read as int32 pairs: the buffer's read takes no int64;
- calls keep the shape the model was compiled for, one row (or its fixed batch) a call, as
  an app calls it (see ``run``).

Its outputs are measured against the SavedModel's as the Interpreter's are
(common.tflite.parity) and must pass the same gate.
"""

import dataclasses
from typing import Dict, Tuple

import numpy as np

from tfkfp.components.common.tflite import litert
from tfkfp.components.common.tflite import parity as tflite_parity
from tfkfp.components.common.tflite.inputs import Examples, fixed_batches
from tfkfp.components.common.tflite.parity import Figures, Gate, Reading

BUFFER_DTYPES = ("float32", "float16", "int32", "int8", "uint8", "bool")
RUNTIME = "LiteRT CompiledModel (CPU)"


@dataclasses.dataclass(frozen=True)
class CompiledCheck:
    """What CompiledModel checked of a model; the Interpreter checks every output."""

    outputs: Tuple[str, ...] = ()  # outputs measured in CompiledModel too
    skipped: str = ""  # why CompiledModel did not run the model at all
    figures: Figures | None = None
    max_abs_diff: float | None = None  # of its outputs against the Interpreter's

    def to_dict(self) -> Dict:
        out = {"runtime": RUNTIME, "outputs": list(self.outputs), "skipped": self.skipped,
               "max_abs_diff_vs_interpreter": self.max_abs_diff}
        if self.figures is not None:
            out["figures"] = self.figures.to_dict()
        return out

    def summary(self) -> str:
        """Which runtime checked what, in one line."""
        if self.skipped:
            return f"Interpreter: every output; CompiledModel: not run ({self.skipped})"
        return (f"Interpreter and CompiledModel: {', '.join(self.outputs)} (largest "
                f"difference between them {self.max_abs_diff:.2e})")


def check(content: bytes, signature: str, examples: Examples, reference: Dict[str, np.ndarray],
          interpreted: Dict[str, np.ndarray], fills: Dict[str, np.ndarray] | None = None,
          reading: Reading | None = None) -> CompiledCheck:
    """Run the model through CompiledModel on the examples (as fed to the Interpreter, whose
    outputs are ``interpreted``) and measure what it can produce."""
    interpreter = litert.load_interpreter(content, 1)
    runner = litert.signature_runner(interpreter, signature)
    why_not = unsupported_inputs(runner)
    if why_not:
        return CompiledCheck(skipped=why_not)
    strings = {n: max((len(v) for v in np.asarray(interpreted[n]).reshape(-1)), default=0)
               for n, d in runner.get_output_details().items()
               if np.dtype(d["dtype"]).kind in "SOU"}
    try:
        got = run(content, signature, runner, examples, fills, strings)
    except RuntimeError as err:  # the runtime's own refusal: recorded, not a gate failure
        return CompiledCheck(skipped=f"CompiledModel could not run it: {_first_line(err)}")
    measured = {n: v for n, v in reference.items() if n in got}
    figures = Figures(mode="compiled_model", size_bytes=len(content), examples=len(examples),
                      **tflite_parity.outputs_figures(got, measured, reading or Reading(),
                                                      examples.labels))
    diff = max((_difference(got[n], interpreted[n]) for n in got), default=0.0)
    return CompiledCheck(tuple(sorted(got)), figures=figures, max_abs_diff=diff)


def _difference(got: np.ndarray, interpreted: np.ndarray) -> float:
    """The largest absolute difference; strings: 0 when all equal, else 1."""
    if np.asarray(got).dtype.kind in "SOU":
        return float(not np.array_equal(got, interpreted))
    return float(np.max(np.abs(got.astype(np.float64) - interpreted), initial=0.0))


def failures(found: CompiledCheck, gate: Gate) -> list:
    """Why CompiledModel's figures fail the gate (empty: they pass, or it did not run)."""
    if found.figures is None:
        return []
    return [f"in {RUNTIME}: {why}" for why in tflite_parity.failures(found.figures, gate)]


def unsupported_inputs(runner) -> str:
    """Why CompiledModel cannot feed the signature's inputs (empty: it can)."""
    bad = {n: np.dtype(d["dtype"]) for n, d in runner.get_input_details().items()}
    bad = {n: "string" if t.kind in "SOU" else t.name for n, t in bad.items()
           if t.kind in "SOU" or t.name not in BUFFER_DTYPES}
    if not bad:
        return ""
    listed = ", ".join(f"{n} ({t})" for n, t in sorted(bad.items()))
    return (f"input(s) {listed}: its TensorBuffers take {', '.join(BUFFER_DTYPES)} only "
            "(ai-edge-litert 2.3)")


def run(content: bytes, signature: str, runner, examples: Examples, fills,
        string_bytes: Dict[str, int]) -> Dict[str, np.ndarray]:
    """The signature's outputs over the examples, one call per row (per fixed batch), fed
    and read as the Interpreter's runner (``runner``) describes them: quantized both ways,
    gaps as the fills. ``string_bytes``: each string output's longest value, which sizes
    its buffer. Calls keep the shape the model was compiled for: resized to more rows, an
    int8 model's outputs kept their one-row shape in ai-edge-litert 2.3 and the run wrote
    past their buffers."""
    from ai_edge_litert.compiled_model import CompiledModel

    model = CompiledModel.from_buffer(content)
    in_details, out_details = runner.get_input_details(), runner.get_output_details()
    rows_per_call = examples.batch or 1
    # LiteRT's string layout: a count and count + 1 int32 offsets, then the bytes
    sizes = {n: 4 * (rows_per_call + 2) + rows_per_call * longest
             for n, longest in string_bytes.items()}
    call = _Call(model, signature, sizes)
    parts: Dict[str, list] = {}
    for rows, real in fixed_batches(examples.features, 1, examples.batch):
        fed = {n: litert.feed_value(v, in_details[n], (fills or {}).get(n))
               for n, v in rows.items()}
        for name, value in call(fed).items():
            parts.setdefault(name, []).append(
                litert.output_value(value, out_details[name])[:real])
    return {n: np.concatenate(v) for n, v in parts.items()}


class _Call:
    """One signature's buffers, made once, and a call through them."""

    def __init__(self, model, signature: str, strings: Dict[str, int]):
        from ai_edge_litert.tensor_buffer import TensorBuffer

        self.model, self.signature, self.strings = model, signature, strings
        self.inputs = {n: model.create_input_buffer_by_name(signature, n)
                       for n in model.get_input_tensor_details(signature)}
        self.details = model.get_output_tensor_details(signature)
        self.outputs = {
            n: (TensorBuffer.create_from_host_memory(np.zeros(strings[n], np.uint8))
                if n in strings else model.create_output_buffer_by_name(signature, n))
            for n in self.details}

    def __call__(self, fed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        for name, value in fed.items():
            self.inputs[name].write(value)
        self.model.run_by_name(self.signature, self.inputs, self.outputs)
        return {n: (_strings(self.outputs[n].read(self.strings[n], np.uint8))
                    if n in self.strings else _read(self.outputs[n], d))
                for n, d in self.details.items()}


def _strings(raw: np.ndarray) -> np.ndarray:
    """A string tensor as LiteRT lays it out: count, count + 1 offsets, the bytes."""
    data = raw.tobytes()
    count = int(np.frombuffer(data, np.int32, 1)[0])
    offsets = np.frombuffer(data, np.int32, count + 1, offset=4)
    return np.array([data[offsets[i]:offsets[i + 1]] for i in range(count)], object)


def _read(buffer, details: Dict) -> np.ndarray:
    shape = [int(x) for x in details["shape"]]
    count = int(np.prod(shape))
    if details["dtype"] == "int64":  # read as int32 pairs: the buffer's read takes no int64
        return buffer.read(2 * count, np.int32).view(np.int64).reshape(shape)
    return buffer.read(count, np.dtype(details["dtype"])).reshape(shape)


def _first_line(err: Exception) -> str:
    return " ".join(str(err).split())[:300]
