"""Vertex AI's online prediction for one Endpoint, faked on loopback as its REST reference
describes it (``projects.locations.endpoints.get`` and ``.predict``), for batch_predict's
vertex endpoint tests:

- ``GET /v1/{endpoint}``: the Endpoint resource, its ``deployedModels`` (``id``, ``model``,
  ``modelVersionId``) and ``trafficSplit``;
- ``POST /v1/{endpoint}:predict``: ``{"instances": [...]}`` in; ``{"predictions": [...],
  "deployedModelId", "model", "modelVersionId", "modelDisplayName"}`` out, the deployed
  models taking the requests in turn (a traffic split); 401 without a bearer token, 400
  with Google's error body over the 1.5 MB request limit.

The predictions come from ``answer(instances) -> [prediction, ...]`` (the test's model).
Every request's Authorization header and size are recorded. No network beyond loopback."""

import collections
import http.server
import itertools
import json
import threading
from typing import Callable, Dict, List, Tuple

from threaded_server import answering, send_json

LIMIT_BYTES = 1_500_000  # "the payload limit size (currently, 1.5MB)"
ENDPOINT = "projects/tfkfp-test/locations/europe-west4/endpoints/4242"
DEPLOYED = (("7001", "projects/tfkfp-test/locations/europe-west4/models/17", "2"),
            ("7002", "projects/tfkfp-test/locations/europe-west4/models/18", "1"))


class FakePredictionService(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Callable[[List[Dict]], List], deployed=DEPLOYED,
                 endpoint: str = ENDPOINT):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer, self.deployed, self.endpoint = answer, list(deployed), endpoint
        self.turns = itertools.cycle(self.deployed)
        self.lock = threading.Lock()
        self.authorizations: List[str] = []  # of every request, GET and POST
        self.request_bytes: List[int] = []  # of every :predict body
        self.statuses = collections.Counter()
        self.rows_by_deployed = collections.Counter()

    @property
    def url(self) -> str:
        """The Endpoint's URL, as ``https://REGION-aiplatform.googleapis.com/v1/...``."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1/{self.endpoint}"

    def resource(self) -> Dict:
        return {"name": self.endpoint, "displayName": "digits",
                "deployedModels": [{"id": d, "model": m, "modelVersionId": v}
                                   for d, m, v in self.deployed],
                "trafficSplit": {d: 100 // len(self.deployed) for d, _, _ in self.deployed}
                if self.deployed else {}}

    def next_deployed(self) -> Tuple[str, str, str]:
        with self.lock:
            return next(self.turns)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        with server.lock:
            server.authorizations.append(self.headers.get("Authorization", ""))
        if self.path == f"/v1/{server.endpoint}":
            return self._answer(200, server.resource())
        self._error(404, "NOT_FOUND", f"Endpoint {self.path} not found.")

    def do_POST(self):
        server = self.server
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with server.lock:
            server.authorizations.append(self.headers.get("Authorization", ""))
            server.request_bytes.append(len(body))
        if self.path != f"/v1/{server.endpoint}:predict":
            return self._error(404, "NOT_FOUND", f"no route {self.path}")
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            return self._error(401, "UNAUTHENTICATED", "Request is missing required "
                               "authentication credential.")
        if len(body) > LIMIT_BYTES:
            return self._error(400, "INVALID_ARGUMENT", "Request payload size exceeds the "
                               f"limit: {LIMIT_BYTES} bytes.")
        instances = json.loads(body)["instances"]
        deployed, model, version = server.next_deployed()
        with server.lock:
            server.rows_by_deployed[deployed] += len(instances)
        self._answer(200, {"predictions": server.answer(instances),
                           "deployedModelId": deployed, "model": model,
                           "modelVersionId": version, "modelDisplayName": "digits"})

    def _error(self, code: int, status: str, message: str):
        self._answer(code, {"error": {"code": code, "message": message, "status": status}})

    def _answer(self, code: int, body: Dict):
        self.server.statuses[code] += 1
        send_json(self, code, body)


def serving(answer: Callable[[List[Dict]], List], **kwargs):
    """A FakePredictionService answering on loopback for the block's length."""
    return answering(FakePredictionService(answer, **kwargs))
