"""Bad requests get a 4xx naming the field and what was expected, and the server goes on;
load beyond the bounded queue is shed with 503; SIGTERM answers the requests in flight."""

import concurrent.futures
import json
import signal

import pytest
from serve_process import running

pytestmark = pytest.mark.slow

GOOD = {"x": 0.5, "colour": "blue"}
BAD_V1 = [  # (body, status, words the error must hold)
    (b"{not json", 400, ["Unrecognized request format"]),
    ({"rows": [GOOD]}, 400, ['"instances"', "keys ['rows']"]),
    ({"instances": []}, 400, ['"instances"', "non-empty list"]),
    ({"instances": [GOOD, [1, 2]]}, 400, ["instance 1", "expected an object"]),
    ({"instances": [{"x": 1.0}]}, 400, ["instance 0", "missing column ['colour']",
                                        "colour (string)"]),
    ({"instances": [dict(GOOD, size=3)]}, 400, ["instance 0", "unknown column ['size']"]),
    ({"instances": [GOOD, {"x": "big", "colour": "red"}]}, 400,
     ["instance 1, column 'x'", "expected float32", "'big'"]),
    ({"instances": [{"x": True, "colour": "red"}]}, 400, ["column 'x'", "True"]),
    ({"instances": [{"x": 1.0, "colour": 7}]}, 400, ["column 'colour'", "a string or null"]),
    ({"instances": [{"b64": "not base64!"}]}, 400, ["instance 0", '"b64" is not base64']),
    ({"instances": [{"b64": "AAAA"}]}, 400, ['instance 0: "b64" is not a serialized '
                                             "tf.train.Example", "protocol buffer"]),
    ({"instances": [GOOD] * 9}, 400, ["9 rows", "at most 8", "max_instances"]),
    ({"instances": [{"x": 0.5, "colour": "y" * 5000}]}, 413, ["over the limit of 4096 bytes",
                                                             "max_request_bytes"]),
]
BAD_V2 = [
    ([{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}], 400,
     ["missing input ['colour']", "colour (BYTES [-1])"]),
    ([{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["a"]},
      {"name": "colour", "shape": [1], "datatype": "BYTES", "data": ["a"]}], 400,
     ["input 'x'", "datatype BYTES", "expected FP32 or FP64"]),
    ([{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]},
      {"name": "colour", "shape": [1], "datatype": "BYTES", "data": ["a"]}], 400,
     ["input 'x'", "shape [1, 2]", "expected [rows]"]),
    ([{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.0, 2.0]},
      {"name": "colour", "shape": [1], "datatype": "BYTES", "data": ["a"]}], 400,
     ["same rows"]),
]


def test_each_bad_request_is_refused_by_name_and_the_server_goes_on(string_table, tmp_path):
    with running(string_table.model, "--max-instances", "8", "--max-request-bytes", "4096",
                 tmp_path=tmp_path) as server:
        before = server.v1([GOOD])
        assert before[0] == 200
        for body, status, words in BAD_V1:
            got_status, got = server.request("POST", "/v1/models/model:predict", body)
            assert got_status == status, (body, got)
            assert all(w in got["error"] for w in words), (words, got["error"])
        for inputs, status, words in BAD_V2:
            got_status, got = server.v2(inputs)
            assert got_status == status, (inputs, got)
            assert all(w in got["error"] for w in words), (words, got["error"])
        assert server.request("POST", "/v2/models/model/infer", b"{bad")[0] == 422
        assert server.request("POST", "/v1/models/other:predict", {"instances": [GOOD]})[0] \
            == 404
        assert server.v1([GOOD]) == before  # same answer: nothing in the server changed
        decoded = [s for body, s, _ in BAD_V1 + BAD_V2 if not isinstance(body, bytes)]
        assert server.metric("tfkfp_requests_refused_total") == decoded.count(400)  # not JSON:
        # refused by KServe before the model sees it


def _example_b64(x: float, colour: str) -> str:
    import base64

    import tensorflow as tf

    record = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[colour.encode()]))}))
    return base64.b64encode(record.SerializeToString()).decode()


def test_numbers_past_float32_are_refused_in_v1_v2_and_b64_and_nan_is_a_gap(string_table,
                                                                           tmp_path):
    """3.5e38 is valid JSON but inf as float32: 400 naming instance and column, as inf is;
    the NaN token (as TF Serving's JSON takes it) is a gap, answered as null is."""
    finite = "expected a finite float32 within ±3.4028235e+38"
    big = '{"instances": [%s, {"x": %s, "colour": "red"}]}'
    with running(string_table.model, tmp_path=tmp_path) as server:
        v1 = "/v1/models/model:predict"
        for value, found in [("3.5e38", "3.5e+38"), ("-Infinity", "-inf")]:
            status, got = server.request("POST", v1, big % (json.dumps(GOOD), value))
            assert status == 400 and f"instance 1, column 'x': found {found}, {finite}" \
                in got["error"], got
        status, got = server.v2([
            {"name": "x", "shape": [2], "datatype": "FP32", "data": [0.5, 3.5e38]},
            {"name": "colour", "shape": [2], "datatype": "BYTES", "data": ["a", "b"]}])
        assert status == 400 and f"instance 1, column 'x': found 3.5e+38, {finite}" \
            in got["error"], got
        status, got = server.v1([{"b64": _example_b64(0.5, "red")},
                                 {"b64": _example_b64(float("inf"), "red")}])
        assert status == 400 and f"instance 1, column 'x': found inf, {finite}" \
            in got["error"], got
        status, gap = server.request("POST", v1, '{"instances": [{"x": NaN, "colour": "red"}]}')
        assert (status, gap) == server.v1([{"x": None, "colour": "red"}])


def test_load_beyond_the_queue_is_shed_and_sigterm_answers_requests_in_flight(
        string_table, tmp_path):
    """The model call is held at a gate: one request runs (held), two wait in the queue of
    two, the next is shed with 503. SIGTERM then, the gate opens: the three are answered."""
    gate = tmp_path / "call-gate"
    env = {"TFKFP_SERVE_CALL_GATE": str(gate)}
    with running(string_table.model, "--max-queue", "2", env=env, tmp_path=tmp_path) as server:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            first = pool.submit(server.v1, [GOOD])
            server.wait_until(lambda: server.metric("tfkfp_requests_in_flight") == 1,
                              "holding the first request", timeout=60)
            queued = [pool.submit(server.v1, [dict(GOOD, x=float(i))]) for i in range(2)]
            server.wait_until(lambda: server.metric("tfkfp_requests_waiting") == 2,
                              "queueing two requests", timeout=60)
            status, body = server.v1([GOOD])
            assert status == 503 and "max_queue 2" in body["error"], body
            assert server.metric("tfkfp_requests_shed_total") == 1
            server.process.send_signal(signal.SIGTERM)
            gate.write_text("")
            answers = [f.result(timeout=120) for f in [first, *queued]]
        assert [a[0] for a in answers] == [200, 200, 200], answers
        assert all(len(a[1]["predictions"]) == 1 for a in answers)
        assert server.process.wait(timeout=60) == 0, server.tail()
