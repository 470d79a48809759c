"""TF Serving's request forms as rows, its answers in columns, the served version and the
``/versions/N`` paths, without a server (a decoder over plain fields, a recording app)."""

import asyncio
import base64
import math

import pytest

from tfkfp.components.serve.errors import RequestError
from tfkfp.components.serve.rows import Field, RowDecoder
from tfkfp.components.serve.tfserving import (
    PredictRequest,
    Versions,
    predict_request,
    served_version,
)


def decoder(*fields):
    fields = fields or (Field("x", "float32", ()), Field("s", "string", ()))
    return RowDecoder(list(fields), ["id"], ["label"], None, max_instances=8,
                      aliases={"s_t": "s"})


def test_columns_become_rows_and_their_answers_columns():
    request = predict_request({"inputs": {"x": [1.0, None], "s_t": ["a", {"b64": "Yg=="}],
                                          "id": [7, 8]}}, decoder())
    assert request.columnar
    rows = decoder().v1(request.body)
    assert rows.features["s"].tolist() == [b"a", b"b"] and rows.keys == [{"id": 7}, {"id": 8}]
    answers = [{"id": 7, "class": "a", "precomputed": True}, {"id": 8, "class": "b"}]
    assert request.answer(answers) == {"outputs": {"id": [7, 8], "class": ["a", "b"],
                                                   "precomputed": [True, None]}}
    assert PredictRequest({}).answer(answers) == {"predictions": answers}


def test_a_one_input_model_takes_bare_values_in_rows_and_columns():
    one = decoder(Field("v", "float32", (2,)))
    for body in ({"instances": [[1, 2], [3, 4]]}, {"inputs": [[1, 2], [3, 4]]}):
        rows = one.v1(predict_request(body, one).body)
        assert rows.features["v"].tolist() == [[1, 2], [3, 4]], body


def test_examples_is_serving_defaults_input_unless_a_column_has_that_name():
    example = {"b64": base64.b64encode(b"record").decode()}
    assert predict_request({"instances": [{"examples": example}]}, decoder()).body == \
        {"instances": [example]}
    named = decoder(Field("examples", "string", ()), Field("x", "float32", ()))
    row = {"examples": example}
    assert predict_request({"instances": [row]}, named).body == {"instances": [row]}


@pytest.mark.parametrize("body,words", [
    ({"signature_name": "predict", "instances": [{}]}, "['serving_default', 'serving_raw']"),
    ({"signature_name": 3, "instances": [{}]}, '"signature_name": 3 is not'),
    ({"instances": [{}], "inputs": {}}, "not both"),
    ({"inputs": {"x": [1.0], "s": ["a", "b"]}}, "every input needs the same rows"),
    ({"inputs": "x"}, "expected an object"),
    ({"inputs": []}, "expected an object"),
    (b'{"inputs": {"x": [NaN]', "the body is not JSON"),
])
def test_predict_bodies_that_do_not_fit_are_refused_by_name(body, words):
    with pytest.raises(RequestError) as err:
        predict_request(body, decoder())
    assert words in str(err.value)


def test_a_json_text_body_may_hold_nan():
    request = predict_request(b'{"inputs": {"x": [NaN], "s": ["a"]}}', decoder())
    assert math.isnan(decoder().v1(request.body).features["x"][0])  # NaN: a gap


@pytest.mark.parametrize("uri,version", [("/m/model", "1"), ("gs://b/models/m/7", "7"),
                                         ("/m/0012/", "12"), ("/m/v2", "1")])
def test_the_served_version_is_the_number_that_ends_the_path(uri, version):
    assert served_version(uri) == version


def test_version_paths_reach_the_unversioned_routes_or_404_naming_the_version():
    seen, sent = [], []

    async def app(scope, receive, send):
        seen.append(scope["path"])

    async def send(message):
        sent.append(message)

    versions = Versions(app, {"model": "3"}.get)
    for path in ("/v1/models/model/versions/3:predict", "/v2/models/model/versions/3/infer",
                 "/v1/models/model/versions/3", "/v1/models/other/versions/3/metadata",
                 "/v1/models/model/versions/3/other", "/v1/models/model:predict"):
        asyncio.run(versions({"type": "http", "path": path}, None, send))
    assert seen == ["/v1/models/model:predict", "/v2/models/model/infer", "/v1/models/model",
                    "/v1/models/other/metadata", "/v1/models/model/versions/3/other",
                    "/v1/models/model:predict"]
    assert not sent
    for path in ("/v1/models/model/versions/4:predict", "/v1/models/model/labels/canary"):
        asyncio.run(versions({"type": "http", "path": path}, None, send))
        assert sent[-2]["status"] == 404 and b"it serves version 3" in sent[-1]["body"]
