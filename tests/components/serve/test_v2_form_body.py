"""An Open Inference Protocol (v2) request as ``curl -d`` sends it (Content-Type
application/x-www-form-urlencoded, no Inference-Header-Content-Length) is read as JSON, as a
v1 one is. Written from the protocol's REST specification (kserve/open-inference-protocol,
inference_rest.md) with a plain HTTP client:

- POST v2/models/${MODEL_NAME}/infer; the request is a JSON object with an optional ``id``,
  ``inputs`` (each ``name``, ``shape``, ``datatype``, ``data``) and optional ``outputs``
  (each ``name``: only those are returned);
- a successful response is HTTP 200 and a JSON object with ``model_name``, ``id`` (the
  request's, when it gave one) and ``outputs`` (each ``name``, ``shape``, ``datatype``,
  ``data``, the data holding as many elements as the shape says);
- a failed request is an HTTP error status (usually 400) with ``{"error": $string}``.
"""

import http.client
import json
import math

import pytest
from serve_process import running

pytestmark = pytest.mark.slow

FORM = "application/x-www-form-urlencoded"  # what `curl -d` sends
REQUEST = {
    "id": "42",
    "inputs": [
        {"name": "x", "shape": [3], "datatype": "FP32", "data": [0.5, -1.0, 2.5]},
        {"name": "colour", "shape": [3], "datatype": "BYTES", "data": ["blue", "zzz", ""]},
    ],
}


def post(port: int, body: dict, content_type: str | None):
    """(status, parsed JSON) of a POST to the v2 infer URL with this Content-Type (None:
    no Content-Type header at all)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest("POST", "/v2/models/model/infer")
        data = json.dumps(body).encode()
        if content_type is not None:
            conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def elements(shape):
    return math.prod(shape)


@pytest.fixture(scope="module")
def port(string_table, tmp_path_factory):
    with running(string_table.model, tmp_path=tmp_path_factory.mktemp("v2_form")) as s:
        yield s.port


@pytest.mark.parametrize("content_type", [FORM, f"{FORM}; charset=utf-8", None])
def test_a_curl_d_v2_request_is_answered_as_the_same_request_sent_as_json(port,
                                                                          content_type):
    status, answer = post(port, REQUEST, content_type)
    assert status == 200, answer
    assert answer["model_name"] == "model" and answer["id"] == "42"
    assert answer["outputs"], answer
    for output in answer["outputs"]:
        assert {"name", "shape", "datatype", "data"} <= set(output), output
        assert len(output["data"]) == elements(output["shape"]), output
        assert output["shape"][0] == 3, output
    assert (status, answer) == post(port, REQUEST, "application/json")


def test_requested_outputs_and_errors_of_a_curl_d_v2_request_follow_the_protocol(port):
    status, answer = post(port, {**REQUEST, "outputs": [{"name": "class"}]}, FORM)
    assert status == 200 and [o["name"] for o in answer["outputs"]] == ["class"], answer
    missing = {"inputs": REQUEST["inputs"][:1]}  # no colour input
    status, answer = post(port, missing, FORM)
    assert status == 400 and isinstance(answer.get("error"), str), answer
    assert (status, answer) == post(port, missing, "application/json")
