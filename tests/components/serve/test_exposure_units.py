"""What ``tfkfp serve`` exposes, the pieces without a server: the default address, who counts
as a local client of the model-repository API, the request gate (413 as a chunked body
streams past the limit, 415, one log line per refusal) and the b64 refusal."""

import asyncio
import logging

import pytest

from tfkfp.components.serve.errors import BodyTooLargeError, ServeOptionsError
from tfkfp.components.serve.options import ServeOptions


def test_serve_listens_on_loopback_unless_told_and_the_repository_api_is_off():
    from tfkfp.cli import main as cli

    args = cli._parser().parse_args(["serve", "m"])
    assert (args.host, args.model_repository_api) == ("127.0.0.1", False)
    assert (ServeOptions().host, ServeOptions().model_repository_api) == ("127.0.0.1", False)
    assert cli._parser().parse_args(["serve", "m", "--model-repository-api"]
                                    ).model_repository_api
    with pytest.raises(ServeOptionsError, match="host is empty"):
        ServeOptions(host=" ")


@pytest.mark.parametrize("host,local", [
    ("127.0.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True), ("[::1]", True),
    ("127.0.0.6", False),  # Istio's sidecar forwards outside traffic from it
    ("127.1.2.3", False), ("10.0.0.7", False), ("::", False), ("0.0.0.0", False),
    ("localhost", False), ("", False), (None, False)])
def test_only_127_0_0_1_and_ipv6_loopback_are_local_clients(host, local):
    from tfkfp.components.serve.repository import is_local

    assert is_local(host) is local


@pytest.mark.parametrize("peer,host", [("ipv4:127.0.0.1:5000", "127.0.0.1"),
                                       ("ipv6:[::1]:5000", "::1"),
                                       ("ipv6:[::ffff:10.0.0.2]:77", "::ffff:10.0.0.2"),
                                       ("unix:/tmp/s", ""), ("", "")])
def test_grpc_peers_are_read_as_addresses(peer, host):
    from tfkfp.components.serve.repository import grpc_peer_host

    assert grpc_peer_host(peer) == host


@pytest.mark.parametrize("host,address", [("127.0.0.1", "127.0.0.1:9"), ("::1", "[::1]:9"),
                                          ("[::1]", "[::1]:9"), ("0.0.0.0", "0.0.0.0:9")])
def test_grpc_listens_where_host_says(host, address):
    from tfkfp.components.serve.grpc_server import listen_address

    assert listen_address(host, 9) == address


def run_gate(limit, chunks, headers=(), answer_exception_with=400):
    """The gate around an app that reads the whole body and, like FastAPI and KServe's
    handlers, answers an exception while reading with ``answer_exception_with``. Returns
    (status, body, chunks the app was handed)."""
    from tfkfp.components.serve.limits import RequestGate

    given = []

    async def app(scope, receive, send):
        status = 200
        try:
            while True:
                message = await receive()
                given.append(message["body"])
                if not message.get("more_body"):
                    break
        except BodyTooLargeError:
            status = answer_exception_with
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b'{"error": ""}'})

    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
               for i, c in enumerate(chunks)]
    sent = []

    async def receive():
        return pending.pop(0)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/models/m:predict",
             "client": ("10.1.2.3", 4000), "headers": list(headers)}
    asyncio.run(RequestGate(app, limit)(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), given


def test_a_chunked_body_is_refused_with_413_as_it_streams_past_the_limit(caplog):
    caplog.set_level(logging.INFO, "tfkfp.serve")
    status, body, given = run_gate(100, [b"x" * 40] * 50)
    assert status == 413 and b"over the limit of 100 bytes" in body
    assert len(given) == 2  # the third chunk passed the limit: nothing more was read
    assert [r.getMessage()[:60] for r in caplog.records] == [
        "refused POST /v1/models/m:predict from 10.1.2.3:4000: 413 re"]
    assert run_gate(100, [b"x" * 40] * 2)[0] == 200


@pytest.mark.parametrize("kind,status", [
    (b"text/plain", 415), (b"text/plain;charset=UTF-8", 415), (b"multipart/form-data", 415),
    (b"application/xml", 415), (b"application/octet-stream", 415),
    (b"application/json", 200), (b"Application/JSON; charset=utf-8", 200),
    (b"application/cloudevents+json", 200), (b"application/x-www-form-urlencoded", 200),
    (None, 200)])
def test_bodies_that_are_not_json_are_refused_with_415(kind, status):
    headers = [(b"content-type", kind)] if kind else []
    got, body, given = run_gate(100, [b"{}"], headers)
    assert got == status, body
    assert (given == []) == (status == 415)  # refused before the app reads anything


def test_a_v2_binary_body_is_taken_with_its_header():
    headers = [(b"content-type", b"application/octet-stream"),
               (b"inference-header-content-length", b"2")]
    assert run_gate(100, [b"{}"], headers)[0] == 200


@pytest.mark.parametrize("headers,seen", [
    ([(b"content-type", b"application/x-www-form-urlencoded")], b"application/json"),
    ([(b"content-type", b"application/x-www-form-urlencoded; charset=utf-8")],
     b"application/json"),
    ([], b"application/json"),
    ([(b"content-type", b"application/json")], b"application/json"),
    ([(b"content-type", b"application/x-www-form-urlencoded"),
      (b"inference-header-content-length", b"2")], b"application/x-www-form-urlencoded"),
    ([(b"content-type", b"application/octet-stream"),
      (b"inference-header-content-length", b"2")], b"application/octet-stream")])
def test_a_form_encoded_or_untyped_body_reaches_the_app_typed_as_json(headers, seen):
    """So KServe reads a v2 `curl -d` body as JSON, as it does a v1 one; a binary tensor
    extension body (with its header) keeps its type."""
    from tfkfp.components.serve.limits import RequestGate

    types = []

    async def app(scope, receive, send):
        types.append([v for k, v in scope["headers"] if k == b"content-type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        pass

    scope = {"type": "http", "method": "POST", "path": "/v2/models/m/infer",
             "client": ("10.1.2.3", 4000), "headers": list(headers)}
    asyncio.run(RequestGate(app, 100)(scope, receive, send))
    assert types == [[seen]]


def test_the_first_record_that_is_not_an_example_is_named_in_few_parse_calls():
    from tfkfp.components.serve.refusals import example_refusal

    good = b"\n\x00"  # an Example with no features
    calls = []

    def parse(records):
        calls.append(len(records))
        if b"bad" in records or b"\n\x02\n\x00" in records:
            raise ValueError("refused")

    records = [good] * 1000
    records[700], records[900] = b"\n\x02\n\x00", b"bad"  # an Example, then not even that
    err = example_refusal(records, parse, ValueError("refused"))
    assert str(err).startswith('instance 700: "b64" is not a serialized tf.train.Example of '
                               "the model's schema (")
    assert len(calls) <= 10  # log2(1000): a binary search, not a call per record
    err = example_refusal(records[:800] + [b"bad"], parse, ValueError("refused"))
    assert "instance 700" in str(err)
    records[700] = good
    err = example_refusal(records, parse, ValueError("refused"))
    assert str(err) == ('instance 900: "b64" is not a serialized tf.train.Example of the '
                        "model's schema (not a tf.train.Example protocol buffer)")
    assert "instance 0:" in str(example_refusal([b"bad"], parse, ValueError("x")))


def test_tensorflows_parse_error_is_cut_to_its_reason():
    import tensorflow as tf

    from tfkfp.components.serve.refusals import example_refusal

    spec = {"x": tf.io.FixedLenFeature([], tf.float32)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def parse(serialized):
        return tf.io.parse_example(serialized, spec)

    good = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))})).SerializeToString()
    wrong = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"1"]))})).SerializeToString()
    records = [good, good, wrong]
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        parse(records)
    assert 'File "' in raised.value.message  # TensorFlow's text holds the graph's traceback
    err = str(example_refusal(records, parse, raised.value))
    assert err.startswith('instance 2: "b64" is not a serialized tf.train.Example')
    assert "Key: x" in err and "Data types don't match" in err, err
    for internal in ('File "', ".py", "Traceback", "Graph execution", "[[", "Op:", "Index"):
        assert internal not in err, (internal, err)
