"""The deploy gate: the new model goes out only when it is at least as good as the one already
serving, both measured here on the same split of the same Dataset."""

import dataclasses
import logging
from typing import Dict, List

import numpy as np

from tfkfp.components.deploy_model.errors import GateInputError

log = logging.getLogger("tfkfp")

# metric -> True when higher is better
METRICS = {"accuracy": True, "log_loss": False}
EVAL_BATCH = 4096


@dataclasses.dataclass(frozen=True)
class GateDecision:
    deploy: bool
    metric: str
    candidate: float
    baseline: float | None  # None: nothing serves yet, or no baseline was given
    margin: float
    examples: int
    baseline_uri: str

    def reason(self) -> str:
        if self.baseline is None:
            return (f"no model serves yet: deploy (candidate {self.metric} "
                    f"{self.candidate:.4f} on {self.examples} examples)")
        better = "higher" if METRICS[self.metric] else "lower"
        verdict = "deploy" if self.deploy else "keep the serving model"
        return (f"{verdict}: candidate {self.metric} {self.candidate:.4f}, serving model "
                f"({self.baseline_uri}) {self.baseline:.4f} on {self.examples} examples; "
                f"{better} is better, margin {self.margin}")

    def metrics(self) -> Dict[str, float]:
        out = {"deploy": float(self.deploy), f"candidate_{self.metric}": self.candidate,
               "examples": float(self.examples), "margin": self.margin}
        if self.baseline is not None:
            out[f"serving_{self.metric}"] = self.baseline
        return out


def check_options(metric: str, margin: float) -> None:
    if metric not in METRICS:
        raise GateInputError(f"gate metric {metric!r} is not one of {', '.join(METRICS)}")
    if margin < 0:
        raise GateInputError(f"gate margin {margin} is negative: it is how much worse than "
                             "the serving model the candidate may be")


def gate(candidate_uri: str, dataset: str, baseline_uri: str = "", split: str = "eval",
         metric: str = "accuracy", margin: float = 0.0, limit: int = 100_000) -> GateDecision:
    """Measure the candidate (and the serving model, when there is one) on up to ``limit``
    examples of ``split``; deploy when the candidate is no worse than the baseline by more
    than ``margin``."""
    from tfkfp.components.batch_predict.models import load_predictor
    from tfkfp.components.common.tflite_inputs import dataset_schema, load_examples

    check_options(metric, margin)
    names = _label_names(dataset_schema(dataset), dataset)
    candidate = load_predictor(candidate_uri)
    models = [candidate] + ([load_predictor(baseline_uri)] if baseline_uri else [])
    inputs = sorted({n for m in models for n in m.inputs})
    examples = load_examples(dataset, split, limit, inputs, "the deploy gate")
    scores = [_score(m, examples, names, metric) for m in models]
    if not baseline_uri:
        return GateDecision(True, metric, scores[0], None, margin, len(examples), "")
    higher_is_better = METRICS[metric]
    deploy = (scores[0] >= scores[1] - margin) if higher_is_better \
        else (scores[0] <= scores[1] + margin)
    return GateDecision(deploy, metric, scores[0], scores[1], margin, len(examples),
                        baseline_uri)


def _label_names(schema, dataset: str) -> List[str]:
    label = schema.label
    if label is None or not label.vocabulary:
        raise GateInputError(f"the deploy gate measures models on labelled examples; "
                             f"{dataset} has no label column with class names")
    return [str(v) for v in label.vocabulary]


def _score(model, examples, names: List[str], metric: str) -> float:
    """The model's metric on the examples, its classes matched to the Dataset's by name."""
    unknown = sorted(set(names) - set(model.labels))
    if unknown:
        raise GateInputError(f"model {model.uri} has classes {model.labels[:20]}, which lack "
                             f"{unknown[:20]} of the Dataset's label: it was trained on other "
                             "classes")
    column = np.array([model.labels.index(n) for n in names])  # Dataset id -> model column
    probs = np.concatenate([
        np.asarray(model.predict({n: v[start:start + EVAL_BATCH]
                                  for n, v in examples.features.items() if n in model.inputs}))
        for start in range(0, len(examples), EVAL_BATCH)])
    truth = column[examples.labels.astype(np.int64)]
    if metric == "accuracy":
        return float(np.mean(np.argmax(probs, axis=1) == truth))
    picked = np.clip(probs[np.arange(len(truth)), truth].astype(np.float64), 1e-7, 1.0)
    return float(-np.mean(np.log(picked)))
