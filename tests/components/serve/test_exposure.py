"""What a running ``tfkfp serve`` exposes, tested as an outside client and an attacker would
act, from the public specs (HTTP, KServe's v2 REST and gRPC protocols): where REST and gRPC
listen (read from the system's listening sockets), the model-repository API (off by default;
asked for, it answers 127.0.0.1 and ::1 only, not traffic forwarded from 127.0.0.6 as Istio's
sidecar forwards outside traffic), readiness once the model is unloaded, and what refused
requests are told and what the server's log gets."""

import base64
import contextlib
import http.client
import json
import socket
import threading

import pytest
from process_helpers import listening_sockets
from serve_process import free_port, running

pytestmark = pytest.mark.slow

GOOD = {"x": 0.5, "colour": "blue"}
V1, V2 = "/v1/models/model:predict", "/v2/models/model/infer"
READINESS = ("/v2/health/ready", "/v2/models/model/ready", "/v1/models/model")
OUTSIDE = "127.0.0.6"  # where Istio's sidecar forwards traffic from outside the pod from


def grpc_api():
    """KServe's v2 gRPC messages and stub (the Open Inference Protocol's proto)."""
    from kserve.protocol.grpc import grpc_predict_v2_pb2 as pb
    from kserve.protocol.grpc import grpc_predict_v2_pb2_grpc as pb_grpc

    return pb, pb_grpc


@contextlib.contextmanager
def grpc_stub(port):
    import grpc

    _, pb_grpc = grpc_api()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def grpc_error(call, request):
    """(status code name, details) of a call expected to fail."""
    import grpc

    try:
        call(request, timeout=120)
    except grpc.RpcError as err:
        return err.code().name, err.details()
    raise AssertionError(f"{call} answered {request}")


def request_from(source, port, method, path):
    """(status, JSON) of a request sent from the address ``source``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120,
                                      source_address=(source, 0))
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@contextlib.contextmanager
def forwarded_from(source, port):
    """A TCP forwarder on a free loopback port that connects on to 127.0.0.1:``port`` from
    the address ``source``, as a sidecar proxy forwards a pod's incoming traffic."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(a, b):
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    def accept():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket()
            upstream.bind((source, 0))
            upstream.connect(("127.0.0.1", port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()


def can_bind(address, family=socket.AF_INET):
    try:
        with socket.socket(family) as s:
            s.bind((address, 0))
        return True
    except OSError:
        return False


def test_the_model_repository_api_is_off_by_default(string_table, tmp_path):
    pb, _ = grpc_api()
    grpc_port = free_port()
    with running(string_table.model, "--grpc-port", str(grpc_port),
                 tmp_path=tmp_path) as server:
        for action in ("unload", "load"):
            status, body = server.request("POST", f"/v2/repository/models/model/{action}")
            assert status == 404 and "--model-repository-api" in body["error"], body
        with grpc_stub(grpc_port) as stub:
            assert grpc_error(stub.RepositoryModelUnload, pb.RepositoryModelUnloadRequest(
                model_name="model"))[0] == "UNIMPLEMENTED"
            assert stub.ServerReady(pb.ServerReadyRequest(), timeout=60).ready
            assert stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=60).extensions == []
        assert all(server.request("GET", path)[0] == 200 for path in READINESS)
        assert server.v1([GOOD])[0] == 200
        assert server.request("GET", "/v2")[1]["extensions"] == []


@pytest.mark.skipif(not can_bind(OUTSIDE), reason=f"{OUTSIDE} is not a local address here")
def test_asked_for_the_repository_api_answers_this_machine_only_and_readiness_follows(
        string_table, tmp_path):
    pb, _ = grpc_api()
    grpc_port = free_port()
    with running(string_table.model, "--grpc-port", str(grpc_port), "--model-repository-api",
                 tmp_path=tmp_path) as server:
        unload = "/v2/repository/models/model/unload"
        status, body = request_from(OUTSIDE, server.port, "POST", unload)
        assert status == 403 and OUTSIDE in body["error"], body
        with forwarded_from(OUTSIDE, grpc_port) as port, grpc_stub(port) as stub:
            code, details = grpc_error(stub.RepositoryModelUnload,
                                       pb.RepositoryModelUnloadRequest(model_name="model"))
            assert code == "PERMISSION_DENIED" and OUTSIDE in details
        assert server.ready() and server.v1([GOOD])[0] == 200

        with grpc_stub(grpc_port) as stub:  # a client on this machine: KServe's agent
            assert stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(
                model_name="model"), timeout=120).isUnloaded
            for path in READINESS:
                assert server.request("GET", path)[0] == 503, path
            assert not stub.ServerReady(pb.ServerReadyRequest(), timeout=60).ready
            assert not stub.ModelReady(pb.ModelReadyRequest(name="model"), timeout=60).ready
            assert server.v1([GOOD])[0] == 503
            status, body = server.request("POST", "/v2/repository/models/model/load",
                                          timeout=180)
            assert (status, body) == (200, {"name": "model", "load": True})
            assert stub.ServerReady(pb.ServerReadyRequest(), timeout=60).ready
        assert all(server.request("GET", path)[0] == 200 for path in READINESS)
        assert server.v1([GOOD])[0] == 200
        assert server.request("POST", unload)[0] == 200
        assert not server.ready()


@pytest.mark.parametrize("host", [None, "127.0.0.1", "::1"], ids=["default", "v4", "v6"])
def test_rest_and_grpc_listen_on_the_asked_host_only(host, string_table, tmp_path):
    if host == "::1" and not (socket.has_ipv6 and can_bind("::1", socket.AF_INET6)):
        pytest.skip("no IPv6 loopback here")
    grpc_port = free_port()
    with running(string_table.model, "--grpc-port", str(grpc_port), host=host,
                 tmp_path=tmp_path, wait_ready=False) as server:
        found = listening_sockets(server.process.pid)
    want = host or "127.0.0.1"
    assert found == {(want, server.port), (want, grpc_port)}, found


def post_chunked(port, path, chunks, kind="application/json"):
    """(status, JSON) of a POST whose body is sent with Transfer-Encoding: chunked."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode())
        with contextlib.suppress(OSError):  # the server may answer before the end
            for chunk in chunks:
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.sendall(b"0\r\n\r\n")
        response = http.client.HTTPResponse(s)
        response.begin()
        return response.status, json.loads(response.read())


def b64(record: bytes) -> dict:
    return {"b64": base64.b64encode(record).decode()}


def example(x: float, colour: str) -> bytes:
    import tensorflow as tf

    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
        "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[colour.encode()]))}
    )).SerializeToString()


def test_refusals_are_named_without_internals_and_logged_in_one_line(string_table, tmp_path):
    pb, _ = grpc_api()
    grpc_port = free_port()
    refused = 0
    with running(string_table.model, "--max-request-bytes", "4096", "--grpc-port",
                 str(grpc_port), tmp_path=tmp_path) as server:
        for path in (V1, V2):  # chunked, so no Content-Length to refuse it by: counted
            status, body = post_chunked(server.port, path, [b" " * 1024] * 64)
            assert status == 413 and "over the limit of 4096 bytes" in body["error"], body
            refused += 1
        text = json.dumps({"instances": [GOOD]})
        for kind in ("text/plain", "text/plain;charset=UTF-8", "multipart/form-data; b=x",
                     "application/xml"):
            for path in (V1, V2):
                status, body = server.request("POST", path, text, {"content-type": kind})
                assert status == 415 and "application/json" in body["error"], (kind, body)
                refused += 1
        for kind in ("application/x-www-form-urlencoded", "application/json; charset=utf-8"):
            assert server.request("POST", V1, text, {"content-type": kind})[0] == 200, kind
        assert post_chunked(server.port, V1, [text.encode()])[0] == 200

        good = example(0.5, "blue")
        status, body = server.v1([b64(good), b64(good), b64(b"\n\x00"), b64(b"hello")])
        assert status == 400 and body["error"].startswith(
            'instance 2: "b64" is not a serialized tf.train.Example of the model\'s schema ('), \
            body
        assert "colour" in body["error"], body  # the reason: colour is missing
        errors = [body["error"]]
        status, body = server.v1([b64(good), b64(b"hello world")])
        assert status == 400 and body["error"].startswith('instance 1: "b64" is not'), body
        errors.append(body["error"])
        refused += 2
        for error in errors:
            for internal in ('File "', ".py", "Traceback", "Graph execution", "[[", "Op:",
                             "/work", "site-packages"):
                assert internal not in error, (internal, error)

        for body, status in [(b"{not json", 400), ({"instances": [{"x": 1.0}]}, 400)]:
            assert server.request("POST", V1, body)[0] == status
            refused += 1
        assert server.request("POST", "/v1/models/other:predict", {"instances": [GOOD]}
                              )[0] == 404
        refused += 1
        with grpc_stub(grpc_port) as stub:
            request = pb.ModelInferRequest(model_name="model", inputs=[
                pb.ModelInferRequest.InferInputTensor(
                    name="x", datatype="FP32", shape=[1],
                    contents=pb.InferTensorContents(fp32_contents=[1.0]))])
            code, details = grpc_error(stub.ModelInfer, request)
            assert code == "INVALID_ARGUMENT" and "missing input ['colour']" in details
            refused += 1
        assert server.v1([GOOD])[0] == 200  # and the server goes on
    with open(server.log, errors="replace") as f:
        log = f.read()
    lines = [line for line in log.splitlines() if "refused " in line]
    assert len(lines) == refused, "\n".join(lines)
    assert "Traceback" not in log and 'File "' not in log, log[-3000:]
