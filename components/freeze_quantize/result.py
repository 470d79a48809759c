"""What freeze_quantize returns: every mode's figures, the choice, the frozen graph's spec."""

import dataclasses
from typing import Dict, List

from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite import parity as tflite_parity
from tfkfp.components.common.tflite.parity import Figures, Gate
from tfkfp.components.freeze_quantize import report


@dataclasses.dataclass(frozen=True)
class FreezeQuantizeResult:
    mode: str  # the mode chosen (auto) or asked for
    signature: str
    figures: List[Figures]  # every mode tried, in the order of common.tflite.modes.MODES
    frozen: Dict  # frozen graph spec: tensor names, node counts, sizes, op histograms
    frozen_agreement: float | None  # None: the outputs hold no class scores
    frozen_max_abs_diff: float
    tflite_dir: str
    frozen_dir: str
    seconds: float
    skipped: Dict[str, str] = dataclasses.field(default_factory=dict)  # auto: mode -> why
    input_columns: Dict[str, str] = dataclasses.field(default_factory=dict)  # input -> column
    gate: Gate = Gate()
    model_dir: str = ""
    sweep_seconds: float = 0.0  # auto's budget; 0: none
    # auto: mode -> why the budget cut it short (a mode measured in part is in figures too)
    cut: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def chosen(self) -> Figures:
        return next(f for f in self.figures if f.mode == self.mode)

    @property
    def float_size(self) -> int | None:
        """The unquantized (float32) model's size, when it was measured."""
        return next((f.size_bytes for f in self.figures if not _quantizes(f.mode)), None)

    def metadata(self) -> Dict:
        return {"mode": self.mode, "signature": self.signature, **self.chosen.to_dict(),
                "modes": {f.mode: f.to_dict() for f in self.figures},
                "skipped": dict(self.skipped), "cut_short": dict(self.cut),
                "input_columns": dict(self.input_columns),
                "seconds": round(self.seconds, 2), "sweep_seconds": self.sweep_seconds,
                "not_chosen": self.not_chosen(),
                "gate": {"max_accuracy_drop": self.gate.max_accuracy_drop,
                         "max_relative_error": self.gate.max_relative_error,
                         "max_rmse_increase": self.gate.max_rmse_increase}}

    def not_chosen(self) -> Dict[str, str]:
        """Each mode measured in full that the gate refused: why."""
        return {f.mode: "; ".join(reasons) for f in self.figures
                if not f.cut_short and (reasons := tflite_parity.failures(f, self.gate))}

    def frozen_metadata(self) -> Dict:
        return {"nodes_before": self.frozen["nodes"]["before"],
                "nodes_after": self.frozen["nodes"]["after"],
                "bytes_before": self.frozen["bytes"]["before"],
                "bytes_after": self.frozen["bytes"]["after"],
                "agreement": self.frozen_agreement, "max_abs_diff": self.frozen_max_abs_diff,
                "inputs": self.frozen["inputs"], "outputs": self.frozen["outputs"]}

    def metrics(self) -> Dict[str, float]:
        out = {"frozen_nodes_before": self.frozen["nodes"]["before"],
               "frozen_nodes_after": self.frozen["nodes"]["after"],
               "frozen_max_abs_diff": self.frozen_max_abs_diff}
        for f in self.figures:
            out.update({f"{f.mode}_size_bytes": f.size_bytes, f"{f.mode}_accuracy": f.accuracy,
                        f"{f.mode}_accuracy_drop": f.accuracy_drop,
                        f"{f.mode}_agreement": f.agreement,
                        f"{f.mode}_relative_error": f.relative_error,
                        f"{f.mode}_rmse": f.rmse, f"{f.mode}_rmse_increase": f.rmse_increase})
            if f.seconds is not None:
                out[f"{f.mode}_seconds"] = f.seconds
            out.update({f"{f.mode}_latency_ms_example": f.latency_example_ms,
                        f"{f.mode}_latency_runs_example": f.latency_runs_example,
                        f"{f.mode}_latency_ms_batch": f.latency_batch_ms,
                        f"{f.mode}_latency_runs_batch": f.latency_runs_batch,
                        f"{f.mode}_cut_short": 1 if f.cut_short else None})
        out["modes_skipped"] = len(self.skipped)
        out["modes_cut_short"] = len(self.cut)
        return {k: float(v) for k, v in out.items() if v is not None}

    def charts(self) -> List:
        """The step's page: size against accuracy (or RMSE) per mode measured; none when no
        mode has the figure (a model without labels or a regressor's value)."""
        chart = report.chart(self.figures, self.mode, self.gate, self.not_chosen())
        return [chart] if chart else []

    def markdown(self) -> str:
        return "\n".join([
            f"## freeze_quantize: chose `{self.mode}`", "",
            f"Model `{self.model_dir}`, signature `{self.signature}`, "
            f"{self.chosen.examples} eval examples, {self.seconds:.1f}s"
            f"{_budget_text(self.sweep_seconds)}.", "",
            report.mode_table(self.figures, self.mode, self.float_size, self.skipped,
                              self.not_chosen(), self.cut), "",
            "### Frozen graph", "",
            report.freeze_table(self.frozen, self.frozen_max_abs_diff, self.frozen_agreement),
            ""])


def _budget_text(seconds: float) -> str:
    return f" (sweep budget {seconds:g}s)" if seconds else ""


def _quantizes(mode: str) -> bool:
    entry = tflite_modes.MODES.get(mode)
    return entry is None or entry.quantized
