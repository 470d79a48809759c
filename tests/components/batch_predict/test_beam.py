"""batch_predict as a Beam job (beam_runner=direct, Beam's FnApiRunner here) against the
step: the same predictions, the same error rows one per bad row, the model loaded once per
process, and the runner refused before any work when it cannot run."""

import glob
import json
import os
import shutil

import numpy as np
import pytest
from beam_table import rows, write_csv

from conftest import flip_byte
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError


def _outputs(folder, kind):
    found = {}
    for path in sorted(glob.glob(os.path.join(folder, f"{kind}-*-of-*.jsonl"))):
        found[os.path.basename(path)] = [json.loads(line) for line in open(path)]
    return found


def _assert_same(step_dir, beam_dir):
    step, beam = _outputs(step_dir, "predictions"), _outputs(beam_dir, "predictions")
    assert list(step) == list(beam) and step
    for name in step:
        assert [r["row id"] for r in step[name]] == [r["row id"] for r in beam[name]]
        assert [r["class"] for r in step[name]] == [r["class"] for r in beam[name]]
        np.testing.assert_allclose([r["top_scores"] for r in beam[name]],
                                   [r["top_scores"] for r in step[name]], atol=1e-5)
    def errors(folder):
        return {name: sorted((e["file"], e["record"], e["reason"]) for e in found)
                for name, found in _outputs(folder, "errors").items()}
    assert errors(step_dir) == errors(beam_dir)


def _both(tmp_path, model, data, **options):
    step = batch_predict(model, data, str(tmp_path / "step"), top_k=2, **options)
    beam = batch_predict(model, data, str(tmp_path / "beam"), top_k=2, beam_runner="direct",
                         **options)
    _assert_same(str(tmp_path / "step"), str(tmp_path / "beam"))
    return step, beam


def test_a_dataset_predicted_in_beam_equals_the_step_with_a_broken_shard(
        beam_table, tmp_path):
    dataset = str(tmp_path / "dataset")
    shutil.copytree(beam_table.dataset, dataset)
    shard = sorted(glob.glob(os.path.join(dataset, "**", "*.tfrecord*"), recursive=True))[1]
    flip_byte(shard, 10)  # a corrupt record: it and the rest of the shard are error rows
    step, beam = _both(tmp_path, beam_table.model, dataset, max_error_fraction=1.0)
    assert (beam.inputs, beam.predictions, beam.errors) == \
        (step.inputs, step.predictions, step.errors)
    assert beam.errors > 0 and beam.path == "beam" and beam.runner == "direct"
    summary = json.load(open(tmp_path / "beam" / "summary-group-00000-of-00001.json"))
    assert summary["runner"] == "direct" and summary["inputs"] == step.inputs
    assert not glob.glob(str(tmp_path / "beam" / ".*"))  # no hidden counts file left


def test_a_csv_with_bad_rows_gives_one_error_row_each_in_beam_as_in_the_step(
        beam_table, tmp_path):
    table = list(rows(300, 11))
    table[5][1] = "inf"  # a non-finite value
    table[17][2] = "not a number"  # a cell that does not parse
    path = write_csv(str(tmp_path / "bad.csv"), table)
    step, beam = _both(tmp_path, beam_table.model, path, keys=["row id", "colour"],
                       max_error_fraction=1.0)
    assert (beam.inputs, beam.errors) == (300, 2) == (step.inputs, step.errors)
    reasons = [e["reason"] for e in _outputs(str(tmp_path / "beam"), "errors")
               ["errors-00000-of-00001.jsonl"]]
    assert "mean radius" in reasons[0] and "finite" in reasons[0]
    assert "od280/od315" in reasons[1]


def test_the_model_is_loaded_once_per_process_over_many_bundles(beam_table, tmp_path):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfkfp.components.batch_predict import beam_job, sources
    from tfkfp.components.common.beam import handler
    from tfkfp.components.common.model.predictor import load_predictor

    predictor = load_predictor(beam_table.model)
    plan = sources.resolve_input(beam_table.dataset)
    features, keys = sources.plan_columns(predictor, plan.schema, None, beam_table.dataset)
    job = beam_job.BeamJob(plan, tuple(enumerate(plan.files)), tuple(features), tuple(keys),
                           beam_table.model, "", tuple(predictor.labels), False, 1, "jsonl",
                           str(tmp_path / "out"), batch_size=16)
    os.makedirs(job.output_dir)
    handler._CACHE.clear()
    before = handler.loads_in_process()
    pipeline = beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"]))
    beam_job.build(pipeline, job)
    result = pipeline.run()
    result.wait_until_finish()
    counters = {c.key.metric.name: c.committed
                for c in result.metrics().query()["counters"]
                if c.key.metric.namespace == handler.NAMESPACE}
    assert handler.loads_in_process() - before == 1
    assert counters["model_loads"] == 1
    assert counters["inputs"] == counters["predictions"] + counters["errors"] == 1200


@pytest.mark.parametrize("runner,options,expected", [
    ("flink", {}, "not one of ['dataflow', 'direct', 'portable']"),
    ("portable", {}, "needs beam_options ['job_endpoint']"),
    ("direct", {"project": "p"}, "do not apply to beam_runner 'direct'"),
    ("direct", {"direct_num_workers": "0"}, "direct_num_workers '0'"),
])
def test_a_runner_that_cannot_run_is_refused_before_any_output(
        beam_table, tmp_path, runner, options, expected):
    with pytest.raises(PredictInputError, match=expected.replace("[", r"\[")):
        batch_predict(beam_table.model, beam_table.dataset, str(tmp_path / "out"),
                      beam_runner=runner, beam_options=options)
    assert not (tmp_path / "out").exists()


def test_dataflow_without_google_credentials_is_refused_before_the_job(beam_table, tmp_path,
                                                                       monkeypatch):
    from tfkfp.components.common.beam.dataflow_errors import DataflowError

    for name in [n for n in os.environ if n.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_"))]:
        monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    for name, value in (("HOME", str(home)), ("CLOUDSDK_CONFIG", str(home)),
                        ("NO_GCE_CHECK", "true"), ("GCE_METADATA_HOST", "127.0.0.1:9"),
                        ("GCE_METADATA_IP", "127.0.0.1:9")):
        monkeypatch.setenv(name, value)
    options = {"project": "my-project", "region": "europe-west4",
               "temp_location": "gs://bucket/tmp",
               "sdk_container_image": "registry.example/tfkfp-beam:0.1.0-py3.11-beam2.77.0"}
    with pytest.raises(DataflowError, match="no Google credentials to launch a Dataflow job"):
        batch_predict(beam_table.model, beam_table.dataset, str(tmp_path / "out"),
                      beam_runner="dataflow", beam_options=options,
                      gcp_resources=str(tmp_path / "gcp_resources"))
    assert json.loads((tmp_path / "gcp_resources").read_text()) == {"resources": []}
    assert not glob.glob(str(tmp_path / "out" / "predictions-*"))
