"""`tfkfp serve` speaks TensorFlow Serving's REST API and the Open Inference Protocol as their
public documents write them (TF Serving's api_rest.md; KServe's predict-api/v2
required_api.md and binary tensor data extension): each request here is written from those
documents, against a real server process."""

import asyncio
import base64
import csv
import json
import math

import numpy as np
import pytest
from serve_process import free_port, running

pytestmark = pytest.mark.slow

ROWS = [{"id": 1, "x": 0.5, "colour": "绿色"}, {"id": 2, "x": None, "colour": "blue"},
        {"id": 3, "x": 2.5, "colour": "rouge, foncé"}, {"id": 4, "x": -1.0, "colour": ""}]


def columns(rows):
    return {name: [r[name] for r in rows] for name in rows[0]}


def b64(data: bytes) -> dict:
    return {"b64": base64.b64encode(data).decode()}


@pytest.fixture(scope="module")
def grpc_port():
    return free_port()


@pytest.fixture(scope="module")
def server(string_table, grpc_port, tmp_path_factory):
    with running(string_table.model, "--top-k", "2", "--keys", "id", "--grpc-port",
                 str(grpc_port), tmp_path=tmp_path_factory.mktemp("tfserving")) as server:
        yield server


@pytest.fixture(scope="module")
def rows_answer(server):
    status, body = server.v1(ROWS)
    assert status == 200, body
    return body


def predict(server, body, path="/v1/models/model:predict"):
    return server.request("POST", path, body)


def test_a_columnar_request_is_answered_in_columns(server, rows_answer):
    """api_rest.md: inputs keyed to "inputs" as {name: [values]}; the answer is
    {"outputs": {name: values}}, the rows' answers column by column."""
    status, body = predict(server, {"signature_name": "serving_default",
                                    "inputs": columns(ROWS)})
    assert status == 200, body
    assert list(body) == ["outputs"]
    predictions = rows_answer["predictions"]
    for field in ("id", "class", "class_id", "score", "top_classes", "top_scores"):
        assert body["outputs"][field] == [p[field] for p in predictions], field


@pytest.mark.parametrize("body,words", [
    ({"inputs": {"x": [0.5, 1.0], "colour": ["blue"]}}, ["same rows", "'x': 2",
                                                          "'colour': 1"]),
    ({"inputs": {"x": [0.5], "colour": ["blue"], "size": [3]}}, ["unknown column ['size']"]),
    ({"inputs": {"x": 0.5, "colour": "blue"}}, ["input 'x'", "one value per row"]),
    ({"instances": [{"x": 0.5, "colour": "blue"}], "inputs": {"x": [0.5]}}, ["not both"]),
])
def test_a_columnar_request_that_does_not_fit_is_refused_by_name(server, body, words):
    status, got = predict(server, body)
    assert status == 400 and all(w in got["error"] for w in words), (words, got)


def test_nan_is_a_gap_and_infinity_is_refused_in_columns_too(server, rows_answer):
    """api_rest.md's JSON conformance: NaN and Infinity are tokens of the request."""
    text = '{"inputs": {"id": [2], "x": [NaN], "colour": ["blue"]}}'
    status, body = predict(server, text)
    assert status == 200, body
    assert body["outputs"]["class"] == [rows_answer["predictions"][1]["class"]]
    status, body = predict(server, '{"inputs": {"x": [0.5, Infinity], "colour": ["a", "b"]}}')
    assert status == 400 and "instance 1, column 'x'" in body["error"], body


def test_b64_values_are_the_bytes_of_a_string_input(server, rows_answer):
    """api_rest.md's "Encoding binary values": {"b64": ...} as the value of an input, in
    rows and in columns."""
    rows = [dict(r, colour=b64(r["colour"].encode())) for r in ROWS]
    status, body = server.v1(rows)
    assert (status, body) == (200, rows_answer)
    status, body = predict(server, {"inputs": columns(rows)})
    assert status == 200, body
    assert body["outputs"]["class"] == [p["class"] for p in rows_answer["predictions"]]
    status, body = server.v1([{"x": 0.5, "colour": {"b64": "not base64!"}}])
    assert status == 400 and "instance 0, column 'colour'" in body["error"], body
    assert '"b64" is not base64' in body["error"]
    status, body = server.v1([{"x": b64(b"\x00"), "colour": "blue"}])
    assert status == 400 and "column 'x'" in body["error"], body


def _example(row) -> bytes:
    import tensorflow as tf

    x = math.nan if row["x"] is None else row["x"]
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "colour": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[row["colour"].encode()]))})).SerializeToString()


def test_serving_default_takes_its_examples_input_as_tf_serving_sends_it(server, rows_answer):
    """The SavedModel's serving_default signature has one input, "examples" (serialized
    tf.train.Example): sent as TF Serving clients send it, named, in rows and in columns."""
    examples = [b64(_example(r)) for r in ROWS]
    want = [p["class"] for p in rows_answer["predictions"]]
    status, body = predict(server, {"signature_name": "serving_default",
                                    "instances": [{"examples": e} for e in examples]})
    assert status == 200, body
    assert [p["class"] for p in body["predictions"]] == want
    status, body = predict(server, {"signature_name": "serving_default",
                                    "inputs": {"examples": examples}})
    assert status == 200, body
    assert body["outputs"]["class"] == want


def test_signature_name_is_honoured_or_refused_naming_the_signatures(server, rows_answer):
    rows = {"instances": ROWS}
    for name in ("serving_default", "serving_raw"):
        assert predict(server, {"signature_name": name, **rows}) == (200, rows_answer), name
    status, body = predict(server, {"signature_name": "classify", **rows})
    assert status == 400, body
    assert all(w in body["error"] for w in ("'classify'", "serving_default", "serving_raw"))


def test_version_paths_take_the_served_version_and_refuse_others(server, rows_answer):
    """api_rest.md: /versions/${VERSION} in the predict, status and metadata URLs."""
    assert predict(server, {"instances": ROWS}, "/v1/models/model/versions/1:predict") \
        == (200, rows_answer)
    for path in ("/v1/models/model/versions/2:predict", "/v1/models/model/labels/stable:predict"):
        status, body = predict(server, {"instances": ROWS}, path)
        assert status == 404 and "it serves version 1" in body["error"], (path, body)
    status, body = server.request("GET", "/v1/models/model/versions/1")
    assert status == 200 and body["model_version_status"][0]["version"] == "1", body
    assert server.request("GET", "/v1/models/model/versions/3")[0] == 404
    status, body = server.request("GET", "/v1/models/model/versions/1/metadata")
    assert status == 200 and body["model_spec"]["version"] == "1", body
    inputs = [{"name": "x", "shape": [1], "datatype": "FP32", "data": [0.5]},
              {"name": "colour", "shape": [1], "datatype": "BYTES", "data": ["blue"]}]
    status, body = server.request("POST", "/v2/models/model/versions/1/infer",
                                  {"inputs": inputs})
    assert status == 200 and len(body["outputs"]) == 5, body
    assert server.request("POST", "/v2/models/model/versions/9/infer",
                          {"inputs": inputs})[0] == 404


def test_model_status_is_kserve_readiness_and_tf_serving_status_in_one_body(server):
    """KServe v1: {"name", "ready"} (and its own client reads it); TF Serving's
    GetModelStatusResponse: model_version_status, as api_rest.md's example shows it."""
    status, body = server.request("GET", "/v1/models/model")
    assert status == 200
    assert body == {"name": "model", "ready": True, "model_version_status": [
        {"version": "1", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}}]}
    assert asyncio.run(_kserve_v1_ready(server.port))
    assert server.request("GET", "/v1/models/other")[0] == 404


async def _kserve_v1_ready(port):
    from kserve import InferenceRESTClient, RESTConfig

    client = InferenceRESTClient(RESTConfig(protocol="v1", retries=0, timeout=60))
    try:
        return await client.is_model_ready(f"http://127.0.0.1:{port}", "model")
    finally:
        await client.close()


def test_model_metadata_is_tf_servings_signature_def_map(server):
    """GetModelMetadataResponse as JSON: model_spec, and metadata.signature_def.signature_def
    {signature: {inputs, outputs: {name: {dtype, tensor_shape: {dim: [{size}]}, name}},
    method_name}}."""
    status, body = server.request("GET", "/v1/models/model/metadata")
    assert status == 200, body
    assert body["model_spec"] == {"name": "model", "signature_name": "", "version": "1"}
    signatures = body["metadata"]["signature_def"]["signature_def"]
    assert sorted(signatures) == ["serving_default", "serving_raw"]
    for signature in signatures.values():
        assert signature["method_name"] == "tensorflow/serving/predict"
        shapes = {name: ([d["size"] for d in info["tensor_shape"]["dim"]], info["dtype"])
                  for part in ("inputs", "outputs") for name, info in signature[part].items()}
        assert set(signature["inputs"]) == {"x", "colour"}
        assert shapes["x"] == (["-1"], "DT_FLOAT") and shapes["colour"] == (["-1"],
                                                                              "DT_STRING")
        assert shapes["class"] == (["-1"], "DT_STRING")
        assert shapes["class_id"] == (["-1"], "DT_INT64")
        assert shapes["top_scores"] == (["-1", "2"], "DT_FLOAT")


V2_INPUTS = [{"name": "x", "shape": [2], "datatype": "FP32", "data": [0.5, 2.5]},
             {"name": "colour", "shape": [2], "datatype": "BYTES", "data": ["blue", "绿色"]}]


def test_v2_outputs_are_the_ones_asked_for_in_their_order(server):
    """required_api.md: the request's "outputs" name the output tensors to return."""
    status, full = server.request("POST", "/v2/models/model/infer", {"inputs": V2_INPUTS})
    assert status == 200, full
    full = {o["name"]: o for o in full["outputs"]}
    status, body = server.request("POST", "/v2/models/model/infer", {
        "id": "42", "inputs": V2_INPUTS, "outputs": [{"name": "score"}, {"name": "class"}]})
    assert status == 200, body
    assert body["id"] == "42"
    assert body["outputs"] == [full["score"], full["class"]]
    status, body = server.request("POST", "/v2/models/model/infer", {
        "inputs": V2_INPUTS, "outputs": [{"name": "probabilities"}]})
    assert status == 400, body
    assert all(w in body["error"] for w in ("'probabilities'", "'class'", "'top_scores'"))


def test_v2_binary_data_parameters_are_honoured_and_unknown_parameters_refused(server):
    """KServe's binary tensor data extension: "binary_data_output" for the request and
    "binary_data" for a requested output return tensors as raw bytes after the JSON, whose
    length is in the Inference-Header-Content-Length header."""
    import http.client

    body = json.dumps({"inputs": V2_INPUTS, "outputs": [
        {"name": "class_id", "parameters": {"binary_data": True}}, {"name": "class"}]})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v2/models/model/infer", body, {"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    assert response.status == 200, data
    size = int(response.getheader("inference-header-content-length"))
    header = json.loads(data[:size])
    ids, names = header["outputs"]
    assert ids["name"] == "class_id" and "data" not in ids
    assert ids["parameters"]["binary_data_size"] == 16 == len(data) - size
    status, plain = server.request("POST", "/v2/models/model/infer", {
        "inputs": V2_INPUTS, "outputs": [{"name": "class_id"}, {"name": "class"}]})
    assert np.frombuffer(data[size:], "<i8").tolist() == plain["outputs"][0]["data"]
    assert {k: names[k] for k in ("name", "shape", "datatype", "data")} == \
        {k: plain["outputs"][1][k] for k in ("name", "shape", "datatype", "data")}
    for body, where in [({"inputs": V2_INPUTS, "parameters": {"top_k": 1}}, "parameters"),
                        ({"inputs": V2_INPUTS, "outputs": [
                            {"name": "class", "parameters": {"format": "x"}}]}, "'class'")]:
        status, got = server.request("POST", "/v2/models/model/infer", body)
        assert status == 400 and where in got["error"], got
        assert "unknown parameter" in got["error"] and "binary_data" in got["error"]


def test_grpc_outputs_are_the_ones_asked_for(server, grpc_port):
    from kserve import InferenceGRPCClient, InferInput, InferRequest
    from kserve.protocol.infer_type import RequestedOutput

    async def infer():
        inputs = []
        for spec in V2_INPUTS:
            tensor = InferInput(spec["name"], spec["shape"], spec["datatype"])
            tensor.set_data_from_numpy(np.array(spec["data"], dtype=object if spec[
                "datatype"] == "BYTES" else np.float32), binary_data=False)
            inputs.append(tensor)
        client = InferenceGRPCClient(f"127.0.0.1:{grpc_port}", retries=0, timeout=60)
        try:
            return await client.infer(InferRequest("model", inputs, request_outputs=[
                RequestedOutput("class_id")]))
        finally:
            await client.close()

    response = asyncio.run(infer())
    assert [o.name for o in response.outputs] == ["class_id"]


@pytest.fixture(scope="module")
def awkward_model(tmp_path_factory):
    """A small tfkfp SavedModel (untrained: its answers only need to agree with themselves)
    over columns whose names TensorFlow cannot take, and one named "examples"."""
    import tf_keras

    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    root = tmp_path_factory.mktemp("awkward")
    with open(root / "table.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "mean radius", "价格", "examples", "label"])
        for i in range(60):
            writer.writerow([i, i / 10, (i % 7) / 3, ["a b", "c"][i % 2],
                             ["ja", "nein"][i % 3 > 0]])
    dataset = shard_tfrecords(str(root / "table.csv"), str(root / "dataset"), label="label",
                              keys=["id"]).dataset
    schema = Schema.load(dataset)
    tf_keras.utils.set_random_seed(3)
    inputs = {c.name: tf_keras.Input((), name=c.tensor, dtype="string" if c.name == "examples"
                                     else "float32") for c in schema.features}
    lookup = tf_keras.layers.StringLookup(vocabulary=["a b", "c"], output_mode="one_hot")
    floats = tf_keras.layers.Concatenate()([tf_keras.layers.Reshape((1,))(inputs[n])
                                            for n in ("mean radius", "价格")])
    h = tf_keras.layers.Concatenate()([floats, lookup(inputs["examples"])])
    out = tf_keras.layers.Dense(2, activation="softmax")(tf_keras.layers.Dense(8)(h))
    model = export_model(tf_keras.Model(inputs, out), schema, str(root / "model"))
    return model, {c.name: c.tensor for c in schema.features}


def test_columns_are_keyed_by_column_name_or_tensor_name_as_rows_are(awkward_model,
                                                                     tmp_path):
    """docs/concepts/column-names.md: a column's own name or its tensor name, in rows and in
    columns alike; a column named "examples" is that column, not serving_default's input."""
    model, tensors = awkward_model
    rows = [{"mean radius": 0.5, "价格": 1.0, "examples": "a b"},
            {"mean radius": 3.0, "价格": 0.0, "examples": "c"}]
    with running(model, tmp_path=tmp_path) as server:
        status, by_rows = server.v1(rows)
        assert status == 200, by_rows
        want = [p["class"] for p in by_rows["predictions"]]
        for names in ({n: n for n in tensors}, tensors):
            status, body = predict(server, {"inputs": {names[n]: v for n, v in
                                                       columns(rows).items()}})
            assert status == 200, (names, body)
            assert body["outputs"]["class"] == want
        status, body = predict(server, {"instances": [
            {tensors[n]: v for n, v in r.items()} for r in rows]})
        assert [p["class"] for p in body["predictions"]] == want
        status, meta = server.request("GET", "/v1/models/model/metadata")
        inputs = meta["metadata"]["signature_def"]["signature_def"]["serving_raw"]["inputs"]
        assert {k: v["name"] for k, v in inputs.items()} == tensors


def test_a_tflite_bundle_speaks_the_same_forms(tflite_bundle, tmp_path):
    """The TFLite bundle (no SavedModel signatures of its own but serving_raw) takes the same
    columns, signature names and b64 values, and describes itself the same way."""
    rows = [{k: v for k, v in r.items() if k != "id"} for r in ROWS]
    with running(tflite_bundle, tmp_path=tmp_path) as server:
        status, by_rows = server.v1(rows)
        assert status == 200, by_rows
        status, body = predict(server, {"signature_name": "serving_raw", "inputs": columns(
            [dict(r, colour=b64(r["colour"].encode())) for r in rows])})
        assert status == 200, body
        assert body["outputs"]["class"] == [p["class"] for p in by_rows["predictions"]]
        status, meta = server.request("GET", "/v1/models/model/metadata")
        assert status == 200, meta
        signature = meta["metadata"]["signature_def"]["signature_def"]["serving_raw"]
        assert {k: v["dtype"] for k, v in signature["inputs"].items()} == {
            "x": "DT_FLOAT", "colour": "DT_STRING"}
