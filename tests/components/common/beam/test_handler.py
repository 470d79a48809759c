"""The suite's RunInference handler in a user's own Beam pipeline: rows as dicts encoded one
by one (a bad row is its own error, naming the column), keys carried, answers equal to
batch_predict's, one model load per process on the runner that reloads per bundle, and a
row the model fails on answered alone."""

import json

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions
from beam_table import HEADER, rows

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.beam import handler
from tfkfp.components.common.beam.handler import (
    KeyedTfkfpModelHandler,
    RowFailure,
    RowPrediction,
    TfkfpModelHandler,
)
from tfkfp.components.common.beam.rows import RowEncoder, RowError, model_schema
from tfkfp.components.common.model.predictor import InputSpec, Predictor


def _user_rows():
    """Rows as a user's pipeline holds them (parsed JSON): numbers, blanks as gaps."""
    table = [dict(zip(HEADER, r)) for r in rows(120, 23, first_id=5000)]
    for row in table:  # a JSON gap is null
        row.update({k: None for k in ("mean radius", "a.b[0]") if row[k] == ""})
    table[3]["mean radius"] = float("inf")  # refused: not finite
    del table[7]["colour"]  # refused: a column missing
    table[9]["Größe"] = "many"  # refused: not a number
    return table


class Encode(beam.DoFn):
    """What the how-to shows: encode each row, keyed by its id; a bad row to 'bad'."""

    def __init__(self, model_uri):
        self.model_uri = model_uri

    def setup(self):
        self.encoder = RowEncoder(model_schema(self.model_uri).features)

    def process(self, row):
        try:
            yield row["row id"], self.encoder.encode(row)
        except RowError as err:
            yield beam.pvalue.TaggedOutput("bad", (row["row id"], str(err)))


def _run(model_uri, table, out, runner="FnApiRunner", **batching):
    """The rows through Encode and RunInference; {row id: prediction fields or refusal}."""
    keyed = KeyedTfkfpModelHandler(TfkfpModelHandler(model_uri, top_k=2, **batching))
    with beam.Pipeline(options=PipelineOptions([f"--runner={runner}"])) as p:
        encoded = p | beam.Create(table) | beam.ParDo(Encode(model_uri)).with_outputs(
            "bad", main="good")
        answered = (encoded.good | RunInference(keyed)
                    | beam.MapTuple(lambda key, result: (key, result.inference.fields())))
        _ = ((answered, encoded.bad) | beam.Flatten() | beam.Map(json.dumps)
             | beam.io.WriteToText(str(out / "answers")))
    return {key: value for path in sorted(out.glob("answers*"))
            for key, value in map(json.loads, open(path))}


def test_a_users_pipeline_predicts_as_batch_predict_and_names_each_bad_row(beam_table,
                                                                           tmp_path):
    table = _user_rows()
    found = _run(beam_table.model, table, tmp_path)
    assert len(found) == len(table)
    assert "mean radius" in found[5003] and "finite" in found[5003]
    assert "missing column(s) ['colour']" in found[5007]
    assert "'Größe'" in found[5009] and "'many'" in found[5009]
    good = [r for r in table if r["row id"] not in (5003, 5007, 5009)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good))
    batch_predict(beam_table.model, str(path), str(tmp_path / "out"), keys=["row id"],
                  top_k=2)
    want = [json.loads(line) for line in open(tmp_path / "out" /
                                              "predictions-00000-of-00001.jsonl")]
    for row in want:
        got = found[row["row id"]]
        assert got["top_classes"] == row["top_classes"]
        np.testing.assert_allclose(got["top_scores"], row["top_scores"], atol=1e-5)


def test_the_model_is_loaded_once_on_the_runner_that_starts_a_dofn_per_bundle(beam_table,
                                                                              tmp_path):
    handler._CACHE.clear()
    before = handler.loads_in_process()
    found = _run(beam_table.model, _user_rows(), tmp_path, runner="BundleBasedDirectRunner",
                 max_batch_size=4)
    assert len(found) == 120
    assert handler.loads_in_process() - before == 1


def test_a_row_the_model_fails_on_is_answered_alone():
    def predict(features):
        if (features["x"] == 13).any():
            raise ValueError("x 13 is unlucky")
        return np.stack([features["x"] / 100, 1 - features["x"] / 100], axis=1)

    predictor = Predictor("savedmodel", "m", {"x": InputSpec("float32", ())}, ["a", "b"],
                          predict)
    loaded = handler._Loaded(predictor)
    rows_in = [{"x": np.float32(v)} for v in range(10, 20)]
    answers = [r.inference for r in TfkfpModelHandler("m").run_inference(rows_in, loaded)]
    assert answers[3] == RowFailure("prediction failed: x 13 is unlucky")
    assert all(isinstance(a, RowPrediction) for i, a in enumerate(answers) if i != 3)
    assert answers[0].fields() == {"class": "b", "class_id": 1,
                                   "score": pytest.approx(0.9)}


@pytest.mark.parametrize("value,expected", [
    (None, "missing value; int64 cannot hold a gap"),
    (2.5, "expected a whole number"),
    ([1], "expected int64"),
])
def test_an_int64_cell_is_refused_naming_the_column(value, expected):
    from tfkfp.components.common.data.schema import Column

    with pytest.raises(RowError, match=r"^column 'n': .*" + expected.replace("[", r"\[")):
        RowEncoder([Column("n", "int64")]).encode({"n": value})


def test_the_how_to_pipeline_runs_as_written(beam_table, tmp_path, monkeypatch):
    """docs/how-to/beam.md's pipeline, its model path pointed at a real model."""
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[4] / "docs" / "how-to" / "beam.md"
    code = re.search(r"```python\n(.*?)```", page.read_text(), re.S).group(1)
    table = _user_rows()
    for row in table:
        row["id"] = row.pop("row id")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in table))
    exec(compile(code.replace("path/to/model", beam_table.model), str(page), "exec"), {})
    predicted = [json.loads(line) for path in sorted(tmp_path.glob("predictions*.jsonl"))
                 for line in open(path)]
    refused = [json.loads(line) for path in sorted(tmp_path.glob("errors*.jsonl"))
               for line in open(path)]
    assert len(predicted) == len(table) - 3 and {r["id"] for r in refused} == {5003, 5007, 5009}
    assert {"class", "class_id", "score", "top_classes", "top_scores"} <= set(predicted[0])
