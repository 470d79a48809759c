"""The serving protocols are one table (common.endpoint.options): what endpoint callers take,
what tfkfp serve prints an example request in, and the command's choices all read it."""

import json

import pytest

from tfkfp.cli.main import _parser
from tfkfp.components.common.endpoint import options
from tfkfp.components.common.endpoint.errors import EndpointInputError
from tfkfp.components.common.endpoint.protocols import PROTOCOLS as ENCODINGS
from tfkfp.components.serve import examples
from tfkfp.components.serve.errors import ServeOptionsError


def test_the_table_gives_callers_and_the_server_their_protocols():
    assert options.called_protocols() == options.PROTOCOLS == ("v2", "v1", "vertex")
    assert options.served_protocols() == examples.PROTOCOLS == ("v1", "v2", "tfserving")


def test_every_protocol_callers_speak_has_an_encoding():
    assert set(ENCODINGS) == set(options.called_protocols())
    assert all(ENCODINGS[name].name == name for name in ENCODINGS)


def test_one_entry_adds_a_protocol_to_callers_the_server_and_the_command(monkeypatch):
    monkeypatch.setitem(options.PROTOCOL_TABLE, "v3", options.Protocol(
        "v3", called=True, served=True, summary="a protocol yet to come"))
    assert options.called_protocols() == ("v2", "v1", "vertex", "v3")
    with pytest.raises(EndpointInputError, match=r"'vertex', 'v3'\)$"):
        options.endpoint_options("http://host", endpoint_protocol="bogus")
    with pytest.raises(ServeOptionsError, match=r"expected one of v1, v2, tfserving, v3$"):
        examples.example_request("bogus", [], {})
    args = _parser().parse_args(["serve", "model", "--example-request", "v3"])
    assert args.example_request == "v3"


def test_refusals_keep_their_words():
    with pytest.raises(EndpointInputError, match=r"^endpoint_protocol 'x' is not one of "
                       r"\('v2', 'v1', 'vertex'\)$"):
        options.endpoint_options("http://host", endpoint_protocol="x")
    with pytest.raises(ServeOptionsError, match=r"^--example-request 'x': expected one of "
                       r"v1, v2, tfserving$"):
        examples.example_request("x", [], {})


def test_v1_instances_carry_gaps_as_null_and_strings_as_text():
    """One encoding for every v1 caller: the endpoint client, deploy's smoke test and its
    endpoint model, tfkfp loadtest."""
    import numpy as np

    from tfkfp.components.common.endpoint.protocols import v1_instances

    rows = v1_instances({"x": np.array([1.5, np.nan], np.float32),
                         "city": np.array([b"Z\xc3\xbcrich", b"\xff"], object),
                         "n": np.array([3, 4], np.int64),
                         "v": np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)})
    assert rows == [{"x": 1.5, "city": "Zürich", "n": 3, "v": [1.0, 2.0]},
                    {"x": None, "city": "\udcff", "n": 4, "v": [3.0, None]}]
    # bytes that are not UTF-8 reach the server, which refuses that row alone
    assert json.loads(ENCODINGS["v1"].encode({"city": np.array([b"\xff"], object)})) == {
        "instances": [{"city": "\udcff"}]}
