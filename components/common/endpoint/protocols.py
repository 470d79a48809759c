"""The serving protocols as the suite's endpoint callers speak them, one table entry
each: KServe v1 (rows ``{"instances": [{column: value}]}``), the Open Inference Protocol v2
(one tensor per column) and a Vertex AI Endpoint's ``:predict`` (v1's rows: deploy_model's
vertex target serves ``tfkfp serve``'s v1 route behind it). Each says its base URL, its
paths (common.model.routes), how large a request may be, how a mini-batch is encoded, how
an answer is read back into ``Answers`` and what its metadata says about the model's inputs
and outputs (or, for Vertex, whether a model is deployed).

Values go as the data holds them: a gap in a float column (NaN) as ``null``, strings as
UTF-8 text, multi-valued columns as nested lists (v1) or flat data with a shape (v2).

An answer is tied to its request as far as the protocol allows: ``mismatch`` says how an
answer is not its request's ("" when it is), and the sender makes error rows of its rows,
never another request's predictions. v2 sends a unique ``id`` per request, which the
protocol returns (tfkfp serve and KServe echo it), and every output's shape and data must
hold the rows sent; v1 and Vertex have no id, so their ``predictions`` must hold the rows
sent. The rows' keys are not sent: tfkfp serve refuses inputs and parameters the model does
not take, and neither it nor KServe echoes them, so a server that reorders the rows within
one answer and keeps their count cannot be caught by the client.
"""

import dataclasses
import json
import math
from typing import Any, Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.endpoint.errors import EndpointError
from tfkfp.components.common.endpoint.options import vertex_base_url
from tfkfp.components.common.model import routes
from tfkfp.components.common.model.predictor import InputSpec


@dataclasses.dataclass
class Answers:
    """One request's answers: a classifier's best classes (names, their scores and the
    first class's id), or a regressor's values; and the model version that answered."""

    rows: int
    class_ids: np.ndarray | None = None  # int64 [rows]
    classes: List[List[str]] | None = None  # per row, best first
    scores: np.ndarray | None = None  # float32 [rows, k]
    values: np.ndarray | None = None  # float32 [rows]
    version: str = ""


@dataclasses.dataclass(frozen=True)
class Served:
    """What the endpoint's metadata says: its inputs (by column), whether it answers a
    value (a regressor), how many classes each answer lists, and the version served."""

    inputs: Dict[str, InputSpec] | None
    regressor: bool | None
    top_k: int | None
    version: str


def _text(value: Any) -> str:
    # bytes that are not UTF-8 survive to the server, which refuses that row alone
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def json_values(values: np.ndarray) -> list:
    """A column's values as JSON-ready (nested) lists: NaN as None, bytes as text."""
    if values.dtype == object or values.dtype.kind == "S":
        flat = [_text(v) for v in values.reshape(-1)]
        return np.array(flat, dtype=object).reshape(values.shape).tolist()
    if values.dtype.kind == "f":
        gaps = np.isnan(values)
        if gaps.any():
            return np.where(gaps, None, values.astype(object)).tolist()
    return values.tolist()


def v1_instances(features: Dict[str, np.ndarray]) -> List[Dict[str, Any]]:
    """Rows as KServe v1 ``instances``: one object per row, its values as json_values."""
    names = list(features)
    columns = [json_values(features[n]) for n in names]
    return [dict(zip(names, row)) for row in zip(*columns)]


def _dumps(body: Dict) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


class _Protocol:
    """What a protocol served at the URL it is given shares: no limit of its own on a
    request's size (the server's refuses: 413), ready once it answers 200."""

    max_request_bytes: int | None = None

    @staticmethod
    def base_url(url: str) -> str:
        return url

    @staticmethod
    def not_ready(body: Any) -> str:
        return ""  # answering 200 is being ready


class V1(_Protocol):
    name = "v1"
    predict_path = staticmethod(routes.v1_predict)
    ready_path = staticmethod(routes.v1_model)
    metadata_path = staticmethod(routes.v1_metadata)

    @staticmethod
    def encode(features: Dict[str, np.ndarray], request_id: str = "") -> bytes:
        """The rows as ``instances`` (v1 has no request id: ``request_id`` is unused)."""
        return _dumps({"instances": v1_instances(features)})

    @staticmethod
    def mismatch(body: Any, rows: int, request_id: str = "") -> str:
        """How the answer is not that of the ``rows`` rows sent ("": it is); v1 has no id."""
        answers = body.get("predictions") if isinstance(body, dict) else None
        if isinstance(answers, list) and len(answers) != rows:
            return f"{len(answers)} predictions answered for the {rows} rows sent"
        return ""

    @staticmethod
    def decode(body: Any, rows: int) -> Answers:
        answers = body.get("predictions") if isinstance(body, dict) else None
        if not isinstance(answers, list) or len(answers) != rows:
            raise _unexpected(body, f"a predictions list of {rows} rows")
        try:
            if answers and "value" in answers[0]:
                return Answers(rows, values=np.array([a["value"] for a in answers],
                                                     np.float32))
            classes = [a.get("top_classes") or [a["class"]] for a in answers]
            scores = [a.get("top_scores") or [a["score"]] for a in answers]
            return Answers(rows, np.array([a["class_id"] for a in answers], np.int64),
                           classes, np.array(scores, np.float32))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise _unexpected(body, "rows with class, class_id and score, or value") \
                from None

    @staticmethod
    def served(metadata: Any) -> Served:
        """TF Serving's metadata, as tfkfp serve answers it: a signature's inputs (dtype,
        dims) and outputs."""
        try:
            signatures = metadata["metadata"]["signature_def"]["signature_def"]
            signature = signatures.get("serving_raw") or next(iter(signatures.values()))
            inputs = {name: InputSpec(datatypes.from_tf(info["dtype"]), _dims(info))
                      for name, info in signature["inputs"].items()}
            outputs = {name: _dims(info) for name, info in signature["outputs"].items()}
            version = str(metadata.get("model_spec", {}).get("version", ""))
        except (KeyError, TypeError, AttributeError, StopIteration):
            return Served(None, None, None, "")
        return Served(inputs, *_outputs(outputs), version)


class V2(_Protocol):
    name = "v2"
    predict_path = staticmethod(routes.v2_infer)
    ready_path = staticmethod(routes.v2_model_ready)
    metadata_path = staticmethod(routes.v2_model)

    @staticmethod
    def encode(features: Dict[str, np.ndarray], request_id: str = "") -> bytes:
        """One tensor per column, and the request's ``id`` (which the answer returns)."""
        inputs = [{"name": name, "datatype": _v2_type(values), "shape": list(values.shape),
                   "data": json_values(values.reshape(-1))} for name, values in features.items()]
        return _dumps({"id": request_id, "inputs": inputs} if request_id else
                      {"inputs": inputs})

    @staticmethod
    def mismatch(body: Any, rows: int, request_id: str = "") -> str:
        """How the answer is not that of request ``request_id`` ("": it is): another id, or
        an output whose shape or data does not hold the ``rows`` rows sent. An answer of
        another form is left to ``decode`` to name."""
        try:
            outputs = body["outputs"]  # first: a body of another form is not judged
            return (_id_mismatch(body, request_id) if request_id else "") or \
                _rows_mismatch(outputs, rows)
        except (KeyError, TypeError, ValueError, AttributeError):
            return ""

    @staticmethod
    def decode(body: Any, rows: int) -> Answers:
        try:
            outputs = {o["name"]: o for o in body["outputs"]}
            version = str(body.get("model_version") or "")
            if "value" in outputs:
                return Answers(rows, values=_data(outputs["value"], np.float32, rows, 1),
                               version=version)
            top = "top_classes" in outputs
            names = outputs["top_classes" if top else "class"]
            scores = _data(outputs["top_scores" if top else "score"], np.float32, rows)
            width = scores.size // rows
            flat = [_text(v) for v in np.array(names["data"], object).reshape(-1)]
            if len(flat) != rows * width:  # names and scores would pair up wrongly
                raise ValueError(f"{len(flat)} class names for {rows} rows of {width}")
            classes = [flat[i * width:(i + 1) * width] for i in range(rows)]
            return Answers(rows, _data(outputs["class_id"], np.int64, rows, 1), classes,
                           scores.reshape(rows, width), version=version)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise _unexpected(body, f"outputs class, class_id and score (or value) for {rows} "
                              "rows") from None

    @staticmethod
    def served(metadata: Any) -> Served:
        """Open Inference Protocol model metadata: ``inputs``, ``outputs``, ``versions``."""
        try:
            inputs = {i["name"]: InputSpec(datatypes.from_v2(i["datatype"]),
                                           tuple(int(d) for d in i["shape"][1:]))
                      for i in metadata["inputs"]}
            outputs = {o["name"]: tuple(int(d) for d in o["shape"][1:])
                       for o in metadata.get("outputs") or []}
            versions = metadata.get("versions") or []
        except (KeyError, TypeError, ValueError, AttributeError):
            return Served(None, None, None, "")
        return Served(inputs or None, *_outputs(outputs),
                      str(versions[-1]) if len(versions) == 1 else "")


class Vertex(V1):
    """A Vertex AI Endpoint: ``POST {endpoint}:predict`` with v1's instances, answered
    ``{"predictions": [...], "deployedModelId", "model", "modelVersionId"}``; its metadata
    is the Endpoint resource (``GET {endpoint}``), listing the models deployed on it."""

    name = "vertex"
    base_url = staticmethod(vertex_base_url)
    max_request_bytes = 1_500_000  # Vertex AI's online prediction request limit, 1.5 MB

    @staticmethod
    def predict_path(model: str) -> str:
        return ":predict"

    @staticmethod
    def ready_path(model: str) -> str:
        return ""  # the Endpoint resource itself

    metadata_path = ready_path

    @staticmethod
    def not_ready(body: Any) -> str:
        deployed = body.get("deployedModels") if isinstance(body, dict) else None
        return "" if deployed else ("no model is deployed on it (deploy one, e.g. "
                                    "deploy_model with target vertex)")

    @staticmethod
    def decode(body: Any, rows: int) -> Answers:
        answers = V1.decode(body, rows)
        answers.version = answered_by(body)
        return answers

    @staticmethod
    def served(metadata: Any) -> Served:
        """The version when one model is deployed (each answer names its own anyway)."""
        deployed = metadata.get("deployedModels") if isinstance(metadata, dict) else None
        version = answered_by(deployed[0]) if isinstance(deployed, list) and \
            len(deployed) == 1 and isinstance(deployed[0], dict) else ""
        return Served(None, None, None, version)


def answered_by(body: Dict) -> str:
    """The model version a Vertex AI answer (or a deployed model) names:
    ``MODEL@VERSION, deployedModelId ID``, the parts it carries."""
    model, version = body.get("model", ""), body.get("modelVersionId", "")
    deployed = body.get("deployedModelId") or body.get("id", "")
    parts = [f"{model}@{version}" if model and version else model or version,
             f"deployedModelId {deployed}" if deployed else ""]
    return ", ".join(p for p in parts if p)


# the encoding of each protocol endpoint callers speak (common.endpoint.options' table)
PROTOCOLS = {protocol.name: protocol for protocol in (V1, V2, Vertex)}


def _v2_type(values: np.ndarray) -> str:
    if values.dtype == object or values.dtype.kind == "S":
        return datatypes.v2_name("string")
    return datatypes.v2_name("int64" if values.dtype.kind in "iu" else "float32")


def _id_mismatch(body: Dict, request_id: str) -> str:
    """The answer must return the request's id (the Open Inference Protocol's rule)."""
    answered = body.get("id")
    if answered is None:
        return (f"the answer carries no id; the request's was {request_id!r} (the Open "
                "Inference Protocol returns it)")
    if answered != request_id:
        return f"the answer's id is {answered!r}, not the request's {request_id!r}"
    return ""


def _rows_mismatch(outputs: List[Dict], rows: int) -> str:
    """Every output's shape must start with the rows sent, and its data hold that shape."""
    for output in outputs:
        dims = [int(d) for d in output["shape"]]
        if not dims or dims[0] != rows:
            return f"output {output['name']!r} has shape {dims} for the {rows} rows sent"
        size = _size(output["data"])
        if size != math.prod(dims):
            return (f"output {output['name']!r} holds {size} values; its shape {dims} says "
                    f"{math.prod(dims)}")
    return ""


def _size(data: Any) -> int:
    """How many values flat or nested (row-major) tensor data holds."""
    if not isinstance(data, list):
        raise TypeError(f"tensor data {str(data)[:80]} is not a list")
    return sum(_size(d) if isinstance(d, list) else 1 for d in data)


def _data(output: Dict, dtype, rows: int, width: int = 0) -> np.ndarray:
    """An output's flat data: ``width`` values per row (0: any whole number, at least 1)."""
    data = np.array(output["data"], dtype).reshape(-1)
    if not rows or data.size % rows or not data.size or (width and data.size != rows * width):
        raise ValueError(f"output {output['name']} holds {data.size} values for {rows} rows")
    return data


def _dims(info: Dict) -> Tuple[int, ...]:
    return tuple(int(d["size"]) for d in info["tensor_shape"]["dim"][1:])


def _outputs(outputs: Dict[str, Tuple[int, ...]]) -> Tuple[bool | None, int | None]:
    """(regressor?, classes listed per answer) from the outputs' names and shapes."""
    if "value" in outputs:
        return True, None
    if "class" in outputs:
        top = outputs.get("top_classes")
        return False, top[0] if top else 1
    return None, None


def _unexpected(body: Any, expected: str) -> EndpointError:
    return EndpointError(f"the endpoint answered {json.dumps(body)[:300]}; expected "
                         f"{expected}")
