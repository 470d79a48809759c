"""batch_predict's endpoint mode through a real ``tfkfp serve`` process: rows with strings and
gaps answered as the in-step path answers them (v1 and v2), and a server killed mid-run and
started again ends with every row predicted once."""

import json
import os

import numpy as np
import pytest
from serve_process import free_port, restarted_mid_run, running
from string_tables import probe_rows

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.options import EndpointOptions
from tfkfp.components.common.data.schema import Schema

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gap_table(string_table, tmp_path_factory):
    """The probe rows (NaN floats, empty, unknown and Unicode strings) four times over, as a
    TFRecord file with an id key, schema.json beside it."""
    import tensorflow as tf

    folder = tmp_path_factory.mktemp("endpoint_gaps")
    Schema.load(string_table.dataset).save(str(folder))
    rows = probe_rows()
    with tf.io.TFRecordWriter(str(folder / "rows.tfrecord")) as writer:
        for i in range(4 * len(rows["x"])):
            x, colour = rows["x"][i % len(rows["x"])], rows["colour"][i % len(rows["x"])]
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
                "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[colour])),
            })).SerializeToString())
    return str(folder / "*.tfrecord")


def rows_by_id(folder):
    return {r["id"]: r for name in sorted(os.listdir(folder)) if name.startswith("predictions-")
            for r in map(json.loads, open(os.path.join(folder, name)))}


def assert_same_answers(got, want):
    assert sorted(got) == sorted(want)
    for key, row in got.items():
        assert row["top_classes"] == want[key]["top_classes"], key
        np.testing.assert_allclose(row["top_scores"], want[key]["top_scores"], atol=1e-5)
        assert row["class_id"] == want[key]["class_id"]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_the_endpoint_answers_as_the_step_does(protocol, string_table, gap_table, tmp_path):
    step = batch_predict(string_table.model, gap_table, str(tmp_path / "step"), keys=["id"],
                         top_k=2)
    with running(string_table.model, "--top-k", "2", tmp_path=tmp_path) as server:
        url = f"http://127.0.0.1:{server.port}"
        # no model given: the columns come from the endpoint's metadata
        remote = batch_predict("", gap_table, str(tmp_path / "endpoint"), keys=["id"],
                               top_k=2, endpoint=EndpointOptions(url, protocol=protocol,
                                                                 batch_rows=16))
    assert (remote.path, remote.inputs, remote.errors) == ("endpoint", step.inputs, 0)
    assert remote.model["columns_from"] == "endpoint metadata"
    assert remote.model["requests"] == -(-step.inputs // 16)
    got = rows_by_id(str(tmp_path / "endpoint"))
    assert_same_answers(got, rows_by_id(str(tmp_path / "step")))
    assert {r["endpoint"] for r in got.values()} == {
        url + ("/v2/models/model/infer" if protocol == "v2" else "/v1/models/model:predict")}
    # v2 answers carry the SavedModel's fingerprint; v1 has TF Serving's metadata version
    assert {r["model_version"] for r in got.values()} == {
        fingerprint(string_table.model) if protocol == "v2" else "1"}


def fingerprint(model_dir: str) -> str:
    import tensorflow as tf

    return tf.saved_model.experimental.read_fingerprint(model_dir).singleprint()


def test_a_server_killed_mid_run_and_restarted_loses_and_doubles_no_row(
        string_table, gap_table, tmp_path):
    step = batch_predict(string_table.model, gap_table, str(tmp_path / "step"), keys=["id"],
                         top_k=2)
    port = free_port()
    result = restarted_mid_run(string_table.model, port, tmp_path, 3, lambda: batch_predict(
        string_table.model, gap_table, str(tmp_path / "endpoint"), keys=["id"], top_k=2,
        endpoint=EndpointOptions(f"http://127.0.0.1:{port}", batch_rows=8, concurrency=3,
                                 retries=12)))
    assert result.model["retries"] >= 3
    assert (result.inputs, result.predictions, result.errors) == (step.inputs, step.inputs, 0)
    assert_same_answers(rows_by_id(str(tmp_path / "endpoint")),
                        rows_by_id(str(tmp_path / "step")))
