"""``tfkfp serve --example-request`` bodies, ``tfkfp loadtest``'s row and body files, and
the schema order of the model's inputs (refusals list missing columns in it)."""

import json
import types

import pytest

from tfkfp.components.serve import examples, load_inputs
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.rows import Field, RequestError, RowDecoder
from tfkfp.components.serve.servable import _in_schema_order

FIELDS = [Field("x2", "float32", ()), Field("n", "int64", ()), Field("word", "string", ()),
          Field("pixels", "float32", (2, 3))]


def test_a_v1_body_has_a_placeholder_per_input_and_the_keys():
    path, body = examples.example_request("v1", FIELDS, {"id": "int64"}, "digits")
    assert path == "/v1/models/digits:predict"
    assert body == {"instances": [{"id": 1, "x2": 0.0, "n": 0, "word": "",
                                   "pixels": [[0.0] * 3] * 2}]}
    assert list(body["instances"][0]) == ["id", "x2", "n", "word", "pixels"]


def test_a_v2_body_has_a_tensor_per_input_with_its_type_and_shape():
    path, body = examples.example_request("v2", FIELDS, {"id": "int64"})
    assert path == "/v2/models/model/infer"
    assert body["inputs"][-1] == {"name": "pixels", "shape": [1, 2, 3], "datatype": "FP32",
                                  "data": [0.0] * 6}
    assert [t["datatype"] for t in body["inputs"]] == ["FP32", "INT64", "BYTES", "FP32"]


def test_a_tfserving_body_is_columns_on_the_v1_route():
    path, body = examples.example_request("tfserving", FIELDS[:2], {"id": "string"})
    assert path == "/v1/models/model:predict"
    assert body == {"inputs": {"id": ["row-1"], "x2": [0.0], "n": [0]}}


def test_the_bodies_are_read_by_the_server_s_decoder():
    decoder = RowDecoder(FIELDS, ["id"], [], None, 16)
    rows = decoder.v1(examples.request_text("v1", FIELDS, {"id": "int64"}))
    assert rows.count == 1 and rows.keys == [{"id": 1}]


def test_an_unknown_protocol_names_the_known_ones():
    with pytest.raises(ServeOptionsError, match="expected one of v1, v2, tfserving"):
        examples.example_request("grpc", FIELDS, {})


def test_inputs_follow_the_schema_order_not_the_signature_s():
    inputs = {name: object() for name in sorted(["pixel_10", "pixel_2", "pixel_1", "extra"])}
    predictor = types.SimpleNamespace(inputs=inputs, aliases={"pixel_1_t": "pixel_1"})
    schema = types.SimpleNamespace(names=["id", "pixel_1", "pixel_2", "pixel_10", "label"])
    assert [n for n, _ in _in_schema_order(predictor, schema)] == [
        "pixel_1", "pixel_2", "pixel_10", "extra"]
    assert [n for n, _ in _in_schema_order(predictor, None)] == sorted(inputs)


def test_missing_columns_are_listed_in_the_model_s_order():
    fields = [Field(f"pixel_{i}", "float32", ()) for i in (0, 1, 2, 10)]
    decoder = RowDecoder(fields, [], [], None, 16)
    with pytest.raises(RequestError, match=r"missing column \['pixel_1', 'pixel_2', "
                                           r"'pixel_10'\]"):
        decoder.v1({"instances": [{"pixel_0": 1.0}]})


def test_rows_of_a_csv_file_are_json_values(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("id,x,word,gap\n7,0.5,red,\n8,2,blue,1\n")
    assert load_inputs.rows_of(str(path), 10, "eval") == [
        {"id": 7, "x": 0.5, "word": "red", "gap": None},
        {"id": 8, "x": 2, "word": "blue", "gap": 1}]
    assert len(load_inputs.rows_of(str(path), 1, "eval")) == 1


def test_rows_of_a_json_lines_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"x": 1.5}\n\n{"x": null}\n')
    assert load_inputs.rows_of(str(path), 10, "eval") == [{"x": 1.5}, {"x": None}]
    path.write_text('{"x": 1.5}\nnot json\n')
    with pytest.raises(ServeOptionsError, match="line 2 is not JSON"):
        load_inputs.rows_of(str(path), 10, "eval")


@pytest.mark.parametrize("name, found", [("rows.txt", "a file of another kind"),
                                         ("absent.parquet", "no such file")])
def test_another_kind_of_rows_file_says_what_was_expected(tmp_path, name, found):
    if found != "no such file":
        (tmp_path / name).write_text("x\n")
    with pytest.raises(ServeOptionsError, match=f"expected a Dataset folder .*CSV file .*"
                                                f"JSON Lines file .*; found {found}"):
        load_inputs.rows_of(str(tmp_path / name), 10, "eval")


@pytest.mark.parametrize("body, route", [
    ({"instances": [{"x": 1}]}, "/v1/models/m:predict"),
    ({"inputs": {"x": [1]}}, "/v1/models/m:predict"),
    ({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]},
     "/v2/models/m/infer"),
])
def test_a_body_file_goes_to_its_protocol_s_route(tmp_path, body, route):
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    assert load_inputs.body_of(str(path), "m") == (route, path.read_bytes())


@pytest.mark.parametrize("text, message", [("{", "not JSON"), ('{"rows": []}', "expected")])
def test_a_body_file_the_server_cannot_read_is_refused(tmp_path, text, message):
    path = tmp_path / "body.json"
    path.write_text(text)
    with pytest.raises(ServeOptionsError, match=message):
        load_inputs.body_of(str(path), "m")
