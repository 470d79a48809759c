"""The serving model as the deploy gate measures it when only an endpoint knows it (target
``existing``): the rows are sent to the endpoint and its answers scored here, so the gate
compares the candidate with the model version the endpoint reports serving, whatever files
it was started from.

The version is what the server reports: the Open Inference Protocol model metadata's
``versions`` (``GET /v2/models/NAME``) where a server lists them, else TF Serving's model
status (``GET /v1/models/NAME``, ``model_version_status``), which ``tfkfp serve`` answers
with its version folder's number (components/serve/tfserving.py). It is asked before and
after the rows are sent: a model replaced meanwhile would mix two models' answers.
"""

import dataclasses
import functools
import json
import urllib.parse
from typing import Any, Dict, List, Sequence

import numpy as np

from tfkfp.components.common.endpoint.client import EndpointClient
from tfkfp.components.common.model import routes
from tfkfp.components.deploy_model.errors import DeployFailed, EndpointNotFound, GateInputError

ROWS_PER_REQUEST = 256
TIMEOUT_S = 60
UNANSWERED = -1.0  # a class the endpoint did not rank for a row (its top-k left it out)


def model_url(base_url: str, name: str) -> str:
    """The endpoint's URL of model ``name``: what the gate is given as the serving model."""
    return base_url.rstrip("/") + routes.v1_model(name)


def is_endpoint(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def split_url(url: str) -> tuple:
    """(base URL, model name) of a ``model_url``."""
    base, marker, name = url.partition("/v1/models/")
    if not marker or not name or "/" in name:
        raise GateInputError(f"serving model {url!r}: an endpoint's model is named "
                             "http(s)://HOST[:PORT]/v1/models/NAME")
    return base, urllib.parse.unquote(name)


def served_version(base_url: str, name: str) -> str | None:
    """The version of model ``name`` the endpoint reports serving; None when it does not
    serve that model (404)."""
    metadata = _get(base_url + routes.v2_model(name), missing_ok=True)
    versions = (metadata or {}).get("versions") or []
    if versions:
        return str(versions[-1])
    status = _get(base_url + routes.v1_model(name), missing_ok=True)
    if status is None:
        return None
    reported = status.get("model_version_status") or [{}]
    return str(reported[0].get("version") or "") or "unversioned"


@dataclasses.dataclass
class EndpointModel:
    """The Predictor attributes the gate reads, answered by the endpoint."""

    uri: str  # model_url
    version: str
    inputs: List[str]
    task: str  # classification or regression, from the outputs it declares
    labels: List[str]  # the Dataset's class names: the columns predict fills

    @property
    def regressor(self) -> bool:
        return self.task == "regression"

    def predict(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        """A regressor's values, or per class of ``labels`` the score the endpoint gave it
        (UNANSWERED where its answer left the class out)."""
        from tfkfp.components.common.endpoint.protocols import v1_instances

        rows = v1_instances({n: features[n] for n in self.inputs})
        answers = [a for start in range(0, len(rows), ROWS_PER_REQUEST)
                   for a in self._post(rows[start:start + ROWS_PER_REQUEST])]
        if self.regressor:
            return np.array([_field(a, "value", self.uri) for a in answers], np.float64)
        return np.array([self._scores(a) for a in answers], np.float64)

    def _post(self, rows: List[Dict[str, Any]]) -> List[Any]:
        url = self.uri + ":predict"
        answer = _request(url, json.dumps({"instances": rows}).encode())
        predictions = answer.get("predictions") if isinstance(answer, dict) else None
        if not isinstance(predictions, list) or len(predictions) != len(rows):
            raise DeployFailed(f"{url} answered {str(answer)[:200]} for {len(rows)} instances; "
                               "expected a predictions list, one per instance")
        return predictions

    def _scores(self, answer: Any) -> List[float]:
        classes = answer.get("top_classes") if isinstance(answer, dict) else None
        scores = answer.get("top_scores") if classes else None
        if not classes:
            classes = [_field(answer, "class", self.uri)]
            scores = [_field(answer, "score", self.uri)]
        row = [UNANSWERED] * len(self.labels)
        for label, score in zip(classes, scores):
            if str(label) not in self.labels:
                raise GateInputError(f"{self.uri} answered class {label!r}, which is not one "
                                     f"of the Dataset's label's {self.labels[:20]}: it serves "
                                     "a model of other classes")
            row[self.labels.index(str(label))] = float(score)
        return row


def load(url: str, labels: Sequence[str], fallback_inputs: Sequence[str]) -> EndpointModel:
    """The endpoint's model at ``url`` (a ``model_url``): its version, inputs and task."""
    base, name = split_url(url)
    version = served_version(base, name)
    if version is None:
        raise GateInputError(f"serving model {url}: the endpoint does not serve {name!r} "
                             "(404)")
    metadata = _get(base + routes.v2_model(name), missing_ok=True) or {}
    inputs = [i["name"] for i in metadata.get("inputs") or [] if "name" in i]
    outputs = {o.get("name") for o in metadata.get("outputs") or []}
    task = "regression" if "value" in outputs and "class" not in outputs else \
        "classification"
    return EndpointModel(url, version, inputs or list(fallback_inputs), task, list(labels))


def check_unchanged(model: EndpointModel) -> None:
    """Refuse a measurement during which the endpoint's model version changed."""
    now = served_version(*split_url(model.uri))
    if now != model.version:
        raise GateInputError(f"{model.uri} served version {model.version} when the gate "
                             f"started and {now} when it finished: its answers mix two "
                             "models; run the gate again")


def _field(answer: Any, name: str, url: str) -> Any:
    if not isinstance(answer, dict) or answer.get(name) is None:
        raise DeployFailed(f"{url} answered {str(answer)[:200]}, without {name!r}")
    return answer[name]


def _get(url: str, missing_ok: bool = False) -> Dict[str, Any] | None:
    try:
        return _request(url)
    except EndpointNotFound:
        if missing_ok:
            return None
        raise DeployFailed(f"{url} answered 404") from None


def _request(url: str, body: bytes | None = None) -> Any:
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        answer = _client(f"{parts.scheme}://{parts.netloc}").send(
            "POST" if body else "GET", path, body)
    except OSError as err:
        raise DeployFailed(f"{url} did not answer: {err}") from None
    if answer.status == 404:
        raise EndpointNotFound(url)
    if not 200 <= answer.status < 300:
        text = answer.data.decode("utf-8", "replace")[:300]
        raise DeployFailed(f"{url} answered {answer.status}: {text}")
    try:
        return json.loads(answer.data)
    except ValueError as err:
        raise DeployFailed(f"{url} answered something other than JSON: {err}") from None


@functools.lru_cache(maxsize=8)
def _client(origin: str) -> EndpointClient:
    """One client (its kept connection) per endpoint: the gate sends many requests."""
    return EndpointClient(origin, {}, retries=0, timeout_s=TIMEOUT_S)
