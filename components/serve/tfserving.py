"""TensorFlow Serving's REST API, beside KServe's v1 (which follows its row form).

Spoken as TF Serving documents it (``api_rest.md``): ``POST /v1/models/NAME[/versions/N]
:predict`` with rows (``{"instances": [...]}``, answered ``{"predictions": [...]}``) or
columns (``{"inputs": {column: [value, ...]}}``, answered ``{"outputs": {field: [value,
...]}}``), an optional ``signature_name`` (one the model serves, else refused naming them),
``{"b64": ...}`` for string values (rows.py) and, for a one-input model, bare values as
instances; ``GET /v1/models/NAME[/versions/N]`` (one body for KServe's readiness, ``name``
and ``ready``, and TF Serving's ``model_version_status``) and ``.../metadata`` (the
``signature_def`` of each signature served). The server serves one version: the number
that ends the model's path (TF Serving's version folder), else 1; ``/versions/N`` paths of
v1 and v2 take it and 404 any other, naming it. Not spoken: ``:classify`` and ``:regress``,
``/labels/`` paths (404), and TF Serving's gRPC PredictionService.
"""

import dataclasses
import json
import re
from typing import Any, Callable, Dict, List

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.model.savedmodel import (
    EXAMPLES_INPUT,
    SIGNATURE_EXAMPLES,
    SIGNATURE_RAW,
)
from tfkfp.components.common.model.version import version_folder
from tfkfp.components.serve.errors import RequestError, too_deep

# the SavedModel's two signatures (a TFLite bundle's serving_raw and the default name): the
# server answers both with the same rows
SIGNATURES = (SIGNATURE_EXAMPLES, SIGNATURE_RAW)
_VERSIONED = re.compile(r"^/(v1|v2)/models/([^/:]+)/(versions|labels)/([^/:]+)(.*)$")
_TAILS = {"v1": ("", ":predict", "/metadata"), "v2": ("", "/ready", "/infer")}


@dataclasses.dataclass
class PredictRequest:
    """A predict body as rows for the decoder (``{"instances": [...]}``), and whether it was
    sent in columns, which shapes its answer."""

    body: Any
    columnar: bool = False

    def answer(self, answers: List[Dict]) -> Dict:
        """``{"predictions": [row, ...]}``, or for columns ``{"outputs": {field: [value per
        row]}}`` (a field a row lacks, e.g. ``precomputed``, is null there)."""
        if not self.columnar:
            return {"predictions": answers}
        fields = list(dict.fromkeys(k for answer in answers for k in answer))
        return {"outputs": {f: [answer.get(f) for answer in answers] for f in fields}}


def predict_request(body: Any, decoder) -> PredictRequest:
    """A v1 / TF Serving predict body as rows, its ``signature_name`` checked; what is not a
    predict body goes on to ``decoder.v1``, which names what it expected."""
    if isinstance(body, (bytes, str)):  # sent without a JSON content type
        try:
            body = json.loads(body)
        except RecursionError:
            raise too_deep() from None
        except ValueError as err:
            raise RequestError(f"the body is not JSON: {err}") from None
    if not isinstance(body, dict):
        return PredictRequest(body)
    signature = body.get("signature_name", "")
    if signature not in ("", *SIGNATURES):
        raise RequestError(f'"signature_name": {signature!r} is not a signature this model '
                           f"serves; it serves {list(SIGNATURES)} (both answer the same "
                           "rows)")
    if "inputs" in body and "instances" in body:
        raise RequestError('a request has rows ("instances") or columns ("inputs"), not both')
    if "inputs" in body:
        return PredictRequest({"instances": _rows_of_columns(body["inputs"], decoder)}, True)
    instances = body.get("instances")
    if isinstance(instances, list) and instances and _row(instances[0], decoder) is not \
            instances[0]:  # bare values or named Examples (the first instance tells)
        return PredictRequest({"instances": [_row(x, decoder) for x in instances]})
    return PredictRequest(body)


def _row(instance: Any, decoder) -> Any:
    """An instance as a row: a one-input model's bare value under its column, and
    ``{"examples": {"b64": ...}}`` (serving_default's input) as the Example it holds."""
    if len(decoder.fields) == 1 and not isinstance(instance, dict):
        return {next(iter(decoder.fields)): instance}
    if isinstance(instance, dict) and len(instance) == 1 and EXAMPLES_INPUT in instance and \
            EXAMPLES_INPUT not in decoder.allowed and EXAMPLES_INPUT not in decoder.aliases:
        return instance[EXAMPLES_INPUT]
    return instance


def _rows_of_columns(inputs: Any, decoder) -> List[Any]:
    """Columns ``{name: [value per row]}`` (a name as a row's key: the column's or its
    tensor's), or a one-input model's list of values, as rows."""
    if isinstance(inputs, list) and inputs:  # one unnamed input: the one column, or Examples
        return [_row(x, decoder) for x in inputs]
    if not isinstance(inputs, dict) or not inputs:
        raise RequestError('"inputs": expected an object {column: [value per row, ...]}; '
                           f"found {json.dumps(inputs)[:60]}")
    for name, values in inputs.items():
        if not isinstance(values, list) or not values:
            raise RequestError(f'"inputs": input {name!r}: expected a non-empty list, one '
                               f"value per row; found {json.dumps(values)[:60]}")
    counts = {name: len(values) for name, values in inputs.items()}
    if len(set(counts.values())) != 1:
        raise RequestError(f'"inputs": every input needs the same rows; found {counts}')
    names = list(inputs)
    return [_row(dict(zip(names, values)), decoder) for values in zip(*inputs.values())]


def served_version(model_uri: str) -> str:
    """The version served: the version folder's number, else 1."""
    return version_folder(model_uri) or "1"


def model_status(name: str, version: str, ready: bool) -> Dict:
    """KServe v1's readiness (``name``, ``ready``) and TF Serving's GetModelStatusResponse
    in one body."""
    return {"name": name, "ready": ready, "model_version_status": [{
        "version": version, "state": "AVAILABLE" if ready else "LOADING",
        "status": {"error_code": "OK", "error_message": ""}}]}


def model_metadata(name: str, version: str, servable) -> Dict:
    """TF Serving's GetModelMetadataResponse: each signature served, with the inputs the
    server takes (keyed by column, ``name`` the tensor name) and the fields it answers."""
    tensors = {column: tensor for tensor, column in servable.decoder.aliases.items()}
    inputs = {i["name"]: _tensor_info(tensors.get(i["name"], i["name"]), i)
              for i in servable.input_types()}
    outputs = {o["name"]: _tensor_info(o["name"], o) for o in servable.output_types()}
    signature = {"inputs": inputs, "outputs": outputs,
                 "method_name": "tensorflow/serving/predict"}
    return {"model_spec": {"name": name, "signature_name": "", "version": version},
            "metadata": {"signature_def": {"signature_def": {
                s: signature for s in SIGNATURES}}}}


def _tensor_info(name: str, spec: Dict) -> Dict:
    return {"dtype": datatypes.tf_of_v2(spec["datatype"]), "name": name,
            "tensor_shape": {"dim": [{"size": str(d), "name": ""} for d in spec["shape"]],
                             "unknown_rank": False}}


def add_routes(app, dataplane) -> None:
    """TF Serving's model status and metadata routes (before KServe's, so its
    ``/v1/models/NAME`` answers with both bodies) and the ``/versions/N`` paths."""
    from fastapi.responses import JSONResponse
    from kserve.errors import ModelNotReady

    async def status(model_name: str):
        ready = bool(await dataplane.model_ready(model_name))  # ModelNotFound: 404
        body = model_status(model_name, _version_of(dataplane, model_name) or "1", ready)
        if not ready:
            return JSONResponse({"error": str(ModelNotReady(model_name)), **body}, 503)
        return body

    async def metadata(model_name: str):
        model = dataplane.get_model_from_registry(model_name)
        if not model.ready:
            raise ModelNotReady(model_name)
        return model_metadata(model_name, served_version(model.model_uri), model.servable)

    app.add_api_route("/v1/models/{model_name}", status, methods=["GET"])
    app.add_api_route("/v1/models/{model_name}/metadata", metadata, methods=["GET"])
    app.add_middleware(Versions, version_of=lambda name: _version_of(dataplane, name))


def _version_of(dataplane, name: str) -> str | None:
    model = dataplane.model_registry.get_model(name)
    return served_version(model.model_uri) if model is not None else None


class Versions:
    """``/v1|v2/models/NAME/versions/N...`` as the path without ``/versions/N`` when N is
    the version served; another version, or a ``/labels/`` path, is 404 naming it."""

    def __init__(self, app: Callable, version_of: Callable[[str], str | None]):
        self.app, self.version_of = app, version_of

    async def __call__(self, scope: Dict[str, Any], receive: Callable, send: Callable) -> None:
        match = _VERSIONED.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or match[5] not in _TAILS[match[1]]:
            await self.app(scope, receive, send)
            return
        protocol, name, kind, version, tail = match.groups()
        served = self.version_of(name)
        if served is not None and (kind == "labels" or not version.isdigit()
                                   or int(version) != int(served)):
            what = f"label {version!r}" if kind == "labels" else f"version {version}"
            await _not_found(send, f"model {name!r} has no {what}; it serves version {served}"
                             f" (/{protocol}/models/{name}/versions/{served}{tail})")
            return
        path = f"/{protocol}/models/{name}{tail}"
        await self.app({**scope, "path": path, "raw_path": path.encode()}, receive, send)


async def _not_found(send: Callable, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": 404,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
