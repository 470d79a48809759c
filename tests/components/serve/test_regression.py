"""tfkfp serve on a regressor: v1 and v2 answer the value beside the keys, the same as batch
prediction; precomputed values answer known keys."""

import json

import numpy as np
import pytest
from serve_process import running

from conftest import regression_rows
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.options import ServeOptions
from tfkfp.components.serve.precomputed import Precomputed
from tfkfp.components.serve.servable import load_servable


def _instances(count=5):
    header = ["house", "area", "age", "district", "rooms", "price"]
    out = []
    for row in regression_rows(count, seed=9):
        instance = dict(zip(header, row))
        instance["age"] = None if instance["age"] == "" else instance["age"]
        out.append(instance)  # the label rides along and is ignored
    return out


def _batch_values(model, instances, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in instances))
    out = tmp_path / "batch"
    batch_predict(model, str(data), str(out), keys=["house"])
    lines = [json.loads(x) for f in sorted(out.glob("predictions-*.jsonl"))
             for x in f.read_text().splitlines()]
    return {r["house"]: r["value"] for r in lines}, str(out)


def test_answers_are_values_like_batch_predictions(regression_model, tmp_path):
    instances = _instances()
    instances[1]["district"] = ""  # a gap in a string column
    want, _ = _batch_values(regression_model, instances, tmp_path)
    servable = load_servable(regression_model, ServeOptions(), 1)
    rows = servable.decoder.v1({"instances": instances})
    answers = servable.v1_answers(rows, *servable.run(rows.features))
    assert [a["house"] for a in answers] == [i["house"] for i in instances]
    assert all(set(a) == {"house", "value"} for a in answers)
    np.testing.assert_allclose([a["value"] for a in answers],
                               [want[i["house"]] for i in instances], rtol=1e-5)
    assert servable.output_types() == [{"name": "value", "datatype": "FP32", "shape": [-1]}]
    with pytest.raises(ServeOptionsError, match="is a regressor"):
        load_servable(regression_model, ServeOptions(top_k=2), 1)


def test_precomputed_values_answer_known_keys(regression_model, tmp_path):
    instances = _instances(3)
    want, folder = _batch_values(regression_model, instances, tmp_path)
    precomputed = Precomputed(folder, "house", 1, reload_s=0)
    answer = precomputed.answer({"house": instances[0]["house"]})
    assert answer["precomputed"] is True and answer["value"] == want[instances[0]["house"]]
    assert set(answer) == {"house", "value", "precomputed", "computed_at"}
    assert precomputed.answer({"house": "unknown"}) is None


@pytest.mark.slow
def test_the_server_answers_a_regressors_value_over_v1_and_v2(regression_model, tmp_path):
    instances = _instances()
    want, _ = _batch_values(regression_model, instances, tmp_path)
    with running(regression_model, tmp_path=tmp_path) as server:
        status, body = server.v1(instances)
        assert status == 200, body
        assert [p["house"] for p in body["predictions"]] == [i["house"] for i in instances]
        np.testing.assert_allclose([p["value"] for p in body["predictions"]],
                                   [want[i["house"]] for i in instances], rtol=1e-5)
        columns = {"area": ("FP32", [i["area"] for i in instances]),
                   "age": ("FP32", [i["age"] for i in instances]),
                   "district": ("BYTES", [i["district"] for i in instances]),
                   "rooms": ("INT64", [i["rooms"] for i in instances])}
        status, body = server.v2([{"name": n, "datatype": t, "shape": [len(v)], "data": v}
                                  for n, (t, v) in columns.items()])
        assert status == 200, body
        (output,) = body["outputs"]
        assert output["name"] == "value" and output["datatype"] == "FP32"
        np.testing.assert_allclose(output["data"], [want[i["house"]] for i in instances],
                                   rtol=1e-5)
        # b64 Examples, one feature per column: the same values (the floats as one block)
        status, body = server.v1([{"b64": _example(i)} for i in instances])
        assert status == 200, body
        np.testing.assert_allclose([p["value"] for p in body["predictions"]],
                                   [want[i["house"]] for i in instances], rtol=1e-5)


def _example(instance) -> str:
    import base64

    import tensorflow as tf

    def floats(v):
        return tf.train.Feature(float_list=tf.train.FloatList(
            value=[float("nan") if v is None else v]))

    feature = {"area": floats(instance["area"]), "age": floats(instance["age"]),
               "district": tf.train.Feature(bytes_list=tf.train.BytesList(
                   value=[instance["district"].encode()])),
               "rooms": tf.train.Feature(int64_list=tf.train.Int64List(
                   value=[instance["rooms"]]))}
    record = tf.train.Example(features=tf.train.Features(feature=feature))
    return base64.b64encode(record.SerializeToString()).decode()
