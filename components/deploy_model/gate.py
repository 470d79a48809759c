"""The deploy gate: the new model goes out only when it is at least as good as the one already
serving, both measured here on the same split of the same Dataset. The serving model is read
from its URI, or, when only an endpoint knows it (``http(s)://HOST/v1/models/NAME``: target
existing), measured through the endpoint at the version it reports (endpoint_model.py)."""

import dataclasses
import logging
from typing import Dict, List

import numpy as np

from tfkfp.components.deploy_model import endpoint_model
from tfkfp.components.deploy_model.errors import GateInputError
from tfkfp.components.deploy_model.options import GATE_METRICS as METRICS
from tfkfp.components.deploy_model.options import check_gate as check_options

log = logging.getLogger("tfkfp")

REGRESSION_METRICS = ("rmse", "mae")
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
    baseline_version: str = ""  # what an endpoint reported serving ("": read from a URI)

    def reason(self) -> str:
        if self.baseline is None:
            return (f"no model serves yet: deploy (candidate {self.metric} "
                    f"{self.candidate:.4f} on {self.examples} examples)")
        better = "higher" if METRICS[self.metric] else "lower"
        verdict = "deploy" if self.deploy else "keep the serving model"
        version = f", version {self.baseline_version}" if self.baseline_version else ""
        return (f"{verdict}: candidate {self.metric} {self.candidate:.4f}, serving model "
                f"({self.baseline_uri}{version}) {self.baseline:.4f} on {self.examples} "
                f"examples; {better} is better, margin {self.margin}")

    def metrics(self) -> Dict[str, float]:
        out = {"deploy": float(self.deploy), f"candidate_{self.metric}": self.candidate,
               "examples": float(self.examples), "margin": self.margin}
        if self.baseline is not None:
            out[f"serving_{self.metric}"] = self.baseline
        return out


def gate(candidate_uri: str, dataset: str, baseline_uri: str = "", split: str = "eval",
         metric: str = "accuracy", margin: float = 0.0, limit: int = 100_000) -> GateDecision:
    """Measure the candidate (and the serving model, when there is one) on up to ``limit``
    examples of ``split``; deploy when the candidate is no worse than the baseline by more
    than ``margin``."""
    from tfkfp.components.common.model.predictor import load_predictor
    from tfkfp.components.common.tflite.inputs import dataset_schema, load_examples

    check_options(metric, margin)
    candidate = load_predictor(candidate_uri)
    names = None if candidate.regressor else _label_names(dataset_schema(dataset), dataset)
    models = [candidate] + ([_baseline(baseline_uri, names, candidate)] if baseline_uri
                            else [])
    for model in models:
        _check_metric_fits(model, metric)
    inputs = sorted({n for m in models for n in m.inputs})
    examples = load_examples(dataset, split, limit, inputs, "the deploy gate",
                             raw_label=candidate.regressor)
    if examples.labels is None:
        raise GateInputError(f"the deploy gate measures models on labelled examples; "
                             f"{dataset} has no label column")
    scores = [_score(m, examples, names, metric) for m in models]
    if not baseline_uri:
        return GateDecision(True, metric, scores[0], None, margin, len(examples), "")
    version = ""
    if isinstance(models[1], endpoint_model.EndpointModel):
        endpoint_model.check_unchanged(models[1])  # one model's answers, not two
        version = models[1].version
    higher_is_better = METRICS[metric]
    deploy = (scores[0] >= scores[1] - margin) if higher_is_better \
        else (scores[0] <= scores[1] + margin)
    return GateDecision(deploy, metric, scores[0], scores[1], margin, len(examples),
                        baseline_uri, version)


def _baseline(uri: str, names: List[str] | None, candidate):
    """The serving model: loaded from its URI, or answered by its endpoint."""
    from tfkfp.components.common.model.predictor import load_predictor

    if endpoint_model.is_endpoint(uri):
        return endpoint_model.load(uri, names or [], candidate.inputs)
    return load_predictor(uri)


def _label_names(schema, dataset: str) -> List[str]:
    label = schema.label
    if label is None or not label.vocabulary:
        raise GateInputError(f"the deploy gate measures models on labelled examples; "
                             f"{dataset} has no label column with class names")
    return [str(v) for v in label.vocabulary]


def _check_metric_fits(model, metric: str) -> None:
    """rmse and mae measure a regressor; accuracy and log_loss a classifier."""
    if model.regressor != (metric in REGRESSION_METRICS):
        fits = REGRESSION_METRICS if model.regressor else \
            tuple(m for m in METRICS if m not in REGRESSION_METRICS)
        raise GateInputError(f"gate metric {metric!r} does not measure model {model.uri}, a "
                             f"{model.task} model; use {' or '.join(fits)}")


def _predictions(model, examples) -> np.ndarray:
    return np.concatenate([
        np.asarray(model.predict({n: v[start:start + EVAL_BATCH]
                                  for n, v in examples.features.items() if n in model.inputs}))
        for start in range(0, len(examples), EVAL_BATCH)])


def _score(model, examples, names: List[str] | None, metric: str) -> float:
    """The model's metric on the examples, its classes matched to the Dataset's by name (a
    regressor's values against the label's)."""
    if model.regressor:
        error = _predictions(model, examples).reshape(-1).astype(np.float64) \
            - examples.labels.astype(np.float64)
        return float(np.sqrt(np.mean(error ** 2)) if metric == "rmse"
                     else np.mean(np.abs(error)))
    unknown = sorted(set(names) - set(model.labels))
    if unknown:
        raise GateInputError(f"model {model.uri} has classes {model.labels[:20]}, which lack "
                             f"{unknown[:20]} of the Dataset's label: it was trained on other "
                             "classes")
    column = np.array([model.labels.index(n) for n in names])  # Dataset id -> model column
    probs = _predictions(model, examples)
    truth = column[examples.labels.astype(np.int64)]
    if metric == "accuracy":
        return float(np.mean(np.argmax(probs, axis=1) == truth))
    picked = probs[np.arange(len(truth)), truth].astype(np.float64)
    _check_scored(model, picked, len(names))
    return float(-np.mean(np.log(np.clip(picked, 1e-7, 1.0))))


def _check_scored(model, picked: np.ndarray, classes: int) -> None:
    """log_loss needs each row's true class scored: an endpoint answers only its top-k."""
    missing = int(np.sum(picked == endpoint_model.UNANSWERED))
    if missing:
        raise GateInputError(
            f"gate metric 'log_loss' needs the score of each row's true class; {model.uri} "
            f"left it out of its answers for {missing} of {len(picked)} rows (it answers its "
            f"top classes only): use gate metric accuracy, or serve with --top-k {classes}")
