"""The smoke test after a deployment: a few real rows sent to the endpoint, each answer
checked against what batch_predict's model code gives for the same row here."""

import dataclasses
import json
import logging
import math
import time
import urllib.parse
from typing import Any, Dict, List

import numpy as np

from tfkfp.components.common.endpoint.client import GOOGLE_SCOPES, EndpointClient, GoogleAuth
from tfkfp.components.common.endpoint.protocols import v1_instances
from tfkfp.components.common.model import routes
from tfkfp.components.deploy_model.errors import SmokeTestFailed

log = logging.getLogger("tfkfp")

VERTEX_HOST = "aiplatform.googleapis.com"


@dataclasses.dataclass(frozen=True)
class SmokeResult:
    url: str
    rows: int
    matched: int
    max_score_diff: float
    latency_ms: float  # of the one request carrying every row


def predict_url(endpoint_url: str, model_name: str) -> str:
    """Vertex AI endpoints take ``:predict``; KServe and `tfkfp serve` the v1 model route."""
    base = endpoint_url.rstrip("/")
    if VERTEX_HOST in base and "/endpoints/" in base:
        return base + ":predict"
    return base + routes.v1_predict(model_name)


def smoke_test(endpoint_url: str, model_name: str, model_uri: str, dataset: str,
               rows: int = 8, split: str = "eval", tolerance: float = 1e-3,
               wait_seconds: float = 60.0) -> SmokeResult:
    """Send ``rows`` rows of ``split`` in one request; raise SmokeTestFailed naming each row
    whose class or score differs from the model's own answer here."""
    from tfkfp.components.common.model.predictor import load_predictor
    from tfkfp.components.common.model.ranking import top_k_of
    from tfkfp.components.common.tflite.inputs import load_examples

    predictor = load_predictor(model_uri)
    examples = load_examples(dataset, split, rows, sorted(predictor.inputs), "the smoke test")
    expected = np.asarray(predictor.predict(examples.features))
    ids, _ = top_k_of(expected, 1)
    url = predict_url(endpoint_url, model_name)
    started = time.perf_counter()
    answers = _post(url, {"instances": v1_instances(examples.features)}, wait_seconds)
    latency_ms = 1000 * (time.perf_counter() - started)
    if len(answers) != len(examples):
        raise SmokeTestFailed(f"{url} answered {len(answers)} predictions for "
                              f"{len(examples)} instances")
    wrong, diffs = [], []
    for row, answer in enumerate(answers):
        problem, diff = _check(answer, expected[row], predictor.labels, tolerance)
        diffs.append(diff)
        if problem:
            wrong.append(f"row {row}: {problem} (expected {predictor.labels[ids[row][0]]!r}, "
                         f"score {expected[row][ids[row][0]]:.5f})")
    if wrong:
        raise SmokeTestFailed(f"{url} answered {len(wrong)} of {len(answers)} rows unlike "
                              f"model {model_uri}:\n  " + "\n  ".join(wrong[:10]))
    log.info("smoke test: %d rows answered as the model does here (%.1f ms)", len(answers),
             latency_ms)
    return SmokeResult(url, len(answers), len(answers), float(max(diffs, default=0.0)),
                       latency_ms)


def _check(answer: Any, probs: np.ndarray, labels: List[str], tolerance: float):
    """("" or what is wrong, |score difference|) for one answer."""
    if not isinstance(answer, dict) or "class" not in answer or "score" not in answer:
        return f"answer {str(answer)[:200]} has no class and score", math.inf
    if answer["class"] not in labels:
        return f"class {answer['class']!r} is not one of the model's classes", math.inf
    mine = float(probs[labels.index(answer["class"])])
    diff = abs(float(answer["score"]) - mine)
    if diff > tolerance:
        return f"score {answer['score']} of class {answer['class']!r}, here {mine:.5f}", diff
    if float(probs.max()) - mine > tolerance:  # a near tie may go either way
        return f"class {answer['class']!r}", diff
    return "", diff


def _post(url: str, body: Dict[str, Any], wait_seconds: float) -> List[Any]:
    """POST JSON and return its predictions; retry refused connections and 503s (a service
    that just became Ready may still be wiring its routes) until ``wait_seconds``."""
    parts = urllib.parse.urlsplit(url)
    client = EndpointClient(f"{parts.scheme}://{parts.netloc}", {}, retries=0, timeout_s=60,
                            auth=_auth(url))
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    waiting = client.backoff(total=None, status_forcelist={503}, every_s=1.0,
                             give_up_at=time.monotonic() + wait_seconds)
    try:
        answer = client.send("POST", path, json.dumps(body).encode(), waiting)
    except OSError as err:
        raise SmokeTestFailed(f"{url} did not answer within {wait_seconds:.0f} s: "
                              f"{err}") from None
    if not 200 <= answer.status < 300:
        raise SmokeTestFailed(f"{url} answered {answer.status}: "
                              f"{answer.data.decode('utf-8', 'replace')[:500]}")
    try:
        return json.loads(answer.data)["predictions"]
    except (KeyError, TypeError, ValueError) as err:
        raise SmokeTestFailed(f"{url} answered without a predictions list: {err}") \
            from None


def _auth(url: str) -> GoogleAuth | None:
    """Vertex AI wants the caller's Google credentials (refreshed when they expire)."""
    if VERTEX_HOST not in url:
        return None
    import google.auth

    credentials, _ = google.auth.default(scopes=list(GOOGLE_SCOPES))
    return GoogleAuth(credentials)
