"""``tfkfp serve`` as a real process: answers equal batch_predict's on rows with gaps and
strings (SavedModel and TFLite, v1 and v2 over REST and gRPC, kserve's own clients), b64
Examples, readiness before and after loading."""

import asyncio
import base64
import concurrent.futures
import json
import math

import numpy as np
import pytest
from serve_process import running
from string_tables import probe_rows

from tfkfp.components.batch_predict.core import batch_predict

pytestmark = pytest.mark.slow


def instances():
    """The probe rows (NaN x, empty, unknown and near-miss colours) as v1 instances, a gap
    written as null or, for a string, as the empty string, with an id key."""
    rows = probe_rows()
    out = []
    for i, (x, colour) in enumerate(zip(rows["x"], rows["colour"])):
        colour = colour.decode()
        out.append({"id": i, "x": None if math.isnan(x) else float(x),
                    "colour": None if colour == "" and i % 2 else colour})
    return out


def batch_answers(model, rows, tmp_path, schema):
    """batch_predict's rows for the same instances, read back from its JSON Lines."""
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "batch"
    batch_predict(model, str(data), str(out), keys=["id"], top_k=2, schema_uri=schema)
    lines = [json.loads(x) for f in sorted(out.glob("predictions-*.jsonl"))
             for x in f.read_text().splitlines()]
    return sorted(lines, key=lambda r: r["id"])


def assert_same(got, want):
    assert [g["id"] for g in got] == [w["id"] for w in want]
    for g, w in zip(got, want):
        assert (g["class"], g["class_id"], g["top_classes"]) == \
            (w["class"], w["class_id"], w["top_classes"]), (g, w)
        np.testing.assert_allclose(g["top_scores"], w["top_scores"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("which", ["savedmodel", "tflite"])
def test_v1_and_v2_answers_equal_batch_predict(which, string_table, tflite_bundle, tmp_path):
    model = string_table.model if which == "savedmodel" else tflite_bundle
    rows = instances()
    want = batch_answers(model, rows, tmp_path, string_table.dataset)
    with running(model, "--top-k", "2", "--keys", "id", tmp_path=tmp_path) as server:
        cuts = np.cumsum([0, 1, 5, 3, 7, 4, 6])
        chunks = [rows[a:b] for a, b in zip(cuts, [*cuts[1:], len(rows)])]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:  # concurrent: batched together
            answers = list(pool.map(server.v1, chunks))
        assert all(status == 200 for status, _ in answers), answers
        got = [p for _, body in answers for p in body["predictions"]]
        assert_same(sorted(got, key=lambda r: r["id"]), want)

        status, body = server.v2(v2_inputs(rows))
        assert status == 200, body
        outputs = {o["name"]: o for o in body["outputs"]}
        assert outputs["class"]["data"] == [w["class"] for w in want]
        assert outputs["top_scores"]["shape"] == [len(rows), 2]
        np.testing.assert_allclose(outputs["score"]["data"], [w["score"] for w in want],
                                   rtol=1e-6, atol=1e-7)
        assert server.metric("tfkfp_batch_rows_count") >= 1


def v2_inputs(rows):
    return [{"name": "x", "shape": [len(rows)], "datatype": "FP32",
             "data": [r["x"] for r in rows]},
            {"name": "colour", "shape": [len(rows)], "datatype": "BYTES",
             "data": [r["colour"] if r["colour"] is not None else "" for r in rows]}]


def test_b64_examples_and_kserve_client(string_table, tmp_path):
    import tensorflow as tf

    rows = instances()
    records = []
    for r in rows:
        records.append(tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(
                value=[math.nan if r["x"] is None else r["x"]])),
            "colour": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[(r["colour"] or "").encode()]))})).SerializeToString())
    with running(string_table.model, "--top-k", "2", tmp_path=tmp_path) as server:
        status, plain = server.v1([{k: v for k, v in r.items() if k != "id"} for r in rows])
        status_b64, examples = server.v1([{"b64": base64.b64encode(x).decode()}
                                          for x in records])
        assert (status, status_b64) == (200, 200), (plain, examples)
        for a, b in zip(plain["predictions"], examples["predictions"]):
            assert a["class"] == b["class"]
            assert a["score"] == pytest.approx(b["score"], rel=1e-6)
        response = asyncio.run(kserve_infer(server.port, rows))
        names = [n.decode() if isinstance(n, bytes) else n
                 for n in response.get_output_by_name("class").data]
        assert names == [p["class"] for p in plain["predictions"]]


def kserve_request(rows):
    """The rows as kserve's own v2 InferRequest (one InferInput per input)."""
    from kserve import InferInput, InferRequest

    inputs = []
    for spec in v2_inputs(rows):
        tensor = InferInput(spec["name"], spec["shape"], spec["datatype"])
        values = np.array(spec["data"], dtype=object if spec["datatype"] == "BYTES"
                          else np.float32)
        tensor.set_data_from_numpy(values, binary_data=False)
        inputs.append(tensor)
    return InferRequest("model", inputs)


async def kserve_infer(port, rows):
    """The v2 request sent with kserve's own REST client (its InferRequest and response)."""
    from kserve import InferenceRESTClient, RESTConfig

    client = InferenceRESTClient(RESTConfig(protocol="v2", retries=0, timeout=60))
    try:
        assert await client.is_model_ready(f"http://127.0.0.1:{port}", "model")
        return await client.infer(f"http://127.0.0.1:{port}", kserve_request(rows),
                                  model_name="model")
    finally:
        await client.close()


def test_grpc_answers_equal_the_rest_v2_answers(string_table, tmp_path):
    """KServe's Open Inference Protocol over gRPC (--grpc-port), called with kserve's own gRPC
    client, answers as the REST v2 endpoint does."""
    from serve_process import free_port

    rows = instances()
    grpc_port = free_port()
    with running(string_table.model, "--grpc-port", str(grpc_port),
                 tmp_path=tmp_path) as server:
        status, body = server.v2(v2_inputs(rows))
        assert status == 200, body
        rest = {o["name"]: o["data"] for o in body["outputs"]}
        response = asyncio.run(kserve_grpc_infer(grpc_port, rows))
    names = [n.decode() if isinstance(n, bytes) else n
             for n in response.get_output_by_name("class").data]
    assert names == rest["class"]
    np.testing.assert_allclose(response.get_output_by_name("score").data, rest["score"],
                               rtol=1e-6, atol=1e-7)


async def kserve_grpc_infer(port, rows):
    from kserve import InferenceGRPCClient

    client = InferenceGRPCClient(f"127.0.0.1:{port}", retries=0, timeout=60)
    try:
        return await client.infer(kserve_request(rows))
    finally:
        await client.close()


def test_tflite_bundle_knows_its_keys_and_refuses_b64_examples_by_name(tflite_bundle,
                                                                      tmp_path):
    with running(tflite_bundle, tmp_path=tmp_path) as server:
        # the bundle's schema.json: the id key is echoed, the label column ignored, as for
        # the SavedModel (the same row a client sends either)
        status, body = server.v1([{"id": 7, "x": 0.5, "colour": "red", "label": "no"}])
        assert status == 200, body
        assert body["predictions"][0]["id"] == 7
        status, body = server.v1([{"b64": "AAAA"}])
        assert status == 400 and "need a SavedModel" in body["error"]
        status, body = server.request("GET", "/v2/models/model")
        assert status == 200
        assert {i["name"]: i["datatype"] for i in body["inputs"]} == {"x": "FP32",
                                                                       "colour": "BYTES"}


def test_ready_only_after_the_model_is_loaded(string_table, tmp_path):
    gate = tmp_path / "load-gate"
    env = {"TFKFP_SERVE_LOAD_GATE": str(gate)}
    with running(string_table.model, env=env, tmp_path=tmp_path, wait_ready=False) as server:
        for path in ("/v2/health/ready", "/v2/models/model/ready", "/v1/models/model"):
            assert server.request("GET", path)[0] == 503, path
        assert server.request("GET", "/v2/health/live")[0] == 200
        assert server.v1([{"x": 1.0, "colour": "blue"}])[0] == 503
        assert "Traceback" not in server.tail()  # "not ready yet" is no error to log
        gate.write_text("")
        server.wait_until(server.ready, "ready once the gate opened")
        for path in ("/v2/health/ready", "/v2/models/model/ready", "/v1/models/model"):
            assert server.request("GET", path)[0] == 200, path
        status, body = server.v1([{"x": 1.0, "colour": "blue"}])
        assert status == 200 and body["predictions"][0]["class"] in ("oui", "non")
    with open(server.log) as f:  # TensorFlow's C++ start-up lines stay off the console
        noise = [line for line in f if "absl::InitializeLog" in line or "cuInit" in line
                 or "oneDNN" in line]
    assert not noise, noise


def test_a_model_that_is_not_there_is_refused_before_start(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tfkfp.cli.main", "serve",
                           str(tmp_path / "nothing"), "--port", "1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert f"model {tmp_path / 'nothing'} does not exist" in done.stderr
