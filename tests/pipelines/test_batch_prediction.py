"""The batch_prediction pipeline under the KFP local runner: the fan-out over file groups
gives the same rows as one task, and the merge step adds the counts up."""

import glob
import json
import os

import pytest
from kfp import compiler
from string_tables import string_table  # noqa: F401  (a session fixture)

from tfkfp.cli.main import main
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.pipelines.batch_prediction import batch_prediction


def rows_in(folders):
    rows = []
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "predictions-*.jsonl"))):
            rows += [json.loads(line) for line in open(path)]
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_fan_out_gives_the_same_rows_as_one_task(demo_model, demo_dataset, tmp_path, capsys):
    one = str(tmp_path / "one")
    single = batch_predict(demo_model, demo_dataset, one, top_k=2)
    code = main(["run", "batch_prediction", "--local", "--pipeline-root", str(tmp_path / "root"),
                 "--set", f"model_uri={demo_model}", "--set", f"dataset_uri={demo_dataset}",
                 "--set", "file_groups=2", "--set", "top_k=2"])
    assert code == 0  # the command a user types, not only the pipeline function
    out = capsys.readouterr().out
    assert "The pipeline declares no outputs; what its tasks made:" in out
    merged = [line for line in out.splitlines() if line.startswith("all_predictions ")]
    assert len(merged) == 1 and "1,797 predictions, 0 errors" in merged[0], out
    quiet = out.split("\npipeline ")[0].splitlines()  # a line as each task starts and ends
    assert quiet[0].startswith("logs   ") and len(quiet) % 2 == 1
    starts = sorted(line[7:] for line in quiet if line.startswith("start  "))
    ends = sorted(line[7:].split("  ")[0] for line in quiet if line.startswith("done   "))
    assert starts == ends and len(starts) == 4  # group_numbers, 2 x batch_predict, merge
    log_dir = quiet[0].split()[1]
    predict_logs = [n for n in os.listdir(log_dir) if n.startswith("batch-predict")]
    assert len(predict_logs) == 2
    for name in predict_logs:
        assert "predicting: " in open(os.path.join(log_dir, name)).read()
    group_dirs = sorted({os.path.dirname(p) for p in glob.glob(
        str(tmp_path / "root" / "**" / "summary-group-*.json"), recursive=True)})
    assert len(group_dirs) == 2
    fanned = rows_in(group_dirs)
    assert len(fanned) == single.predictions == 1797
    assert [r["id"] for r in fanned] == [r["id"] for r in rows_in([one])]
    assert fanned == rows_in([one])
    gathered = glob.glob(str(tmp_path / "root" / "**" / "all_predictions"), recursive=True)
    assert len(gathered) == 1 and rows_in(gathered) == rows_in([one])  # one Dataset of all
    summaries = glob.glob(str(tmp_path / "root" / "**" / "summary"), recursive=True)
    text = "".join(open(p).read() for p in summaries if os.path.isfile(p))
    assert "**1,797** records in, **1,797** predictions, **0** errors; 2 group(s)" in text


def test_the_endpoint_path_is_a_pipeline_parameter_passed_to_every_task(tmp_path):
    import yaml

    out = tmp_path / "batch_prediction.yaml"
    compiler.Compiler().compile(batch_prediction, str(out))
    spec = yaml.safe_load(out.read_text())
    inputs = spec["root"]["inputDefinitions"]["parameters"]
    assert inputs["endpoint_url"]["defaultValue"] == ""  # empty: the model runs in the step
    assert inputs["endpoint_protocol"]["defaultValue"] == "v2"
    fed = spec["components"]["comp-for-loop-1"]["dag"]["tasks"]["batch-predict"]["inputs"]
    assert fed["parameters"]["endpoint_url"] == {
        "componentInputParameter": "pipelinechannel--endpoint_url"}


@pytest.mark.slow
def test_a_run_through_tfkfp_serve_answers_as_the_step(string_table, tmp_path):  # noqa: F811
    from serve_process import running

    step = str(tmp_path / "step")
    batch_predict(string_table.model, string_table.dataset, step, keys=["id"], top_k=2)
    with running(string_table.model, "--top-k", "2", tmp_path=tmp_path) as server:
        code = main(["run", "batch_prediction", "--local", "--pipeline-root",
                     str(tmp_path / "root"), "--set", f"model_uri={string_table.model}",
                     "--set", f"dataset_uri={string_table.dataset}", "--set", "keys=id",
                     "--set", "top_k=2", "--set", "file_groups=2",
                     "--set", f"endpoint_url=http://127.0.0.1:{server.port}",
                     "--set", "endpoint_batch_rows=64"])
    assert code == 0
    gathered = glob.glob(str(tmp_path / "root" / "**" / "all_predictions"), recursive=True)
    got, want = rows_in(gathered), rows_in([step])
    assert [r["id"] for r in got] == [r["id"] for r in want]
    for row, expected in zip(got, want):
        assert row["top_classes"] == expected["top_classes"]
        assert row["top_scores"] == pytest.approx(expected["top_scores"], abs=1e-5)
        assert row["endpoint"].endswith("/v2/models/model/infer")
    summaries = [json.load(open(p)) for p in glob.glob(
        str(tmp_path / "root" / "**" / "summary-group-*.json"), recursive=True)]
    assert len(summaries) == 2 and {s["path"] for s in summaries} == {"endpoint"}
    assert sum(s["model"]["requests"] for s in summaries) >= -(-len(want) // 64)


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_a_run_on_beam_gives_the_rows_of_the_step(demo_model, demo_dataset, tmp_path, capsys):
    one = str(tmp_path / "one")
    batch_predict(demo_model, demo_dataset, one, top_k=2)
    code = main(["run", "batch_prediction", "--pipeline-root", str(tmp_path / "root"),
                 "--set", f"model_uri={demo_model}", "--set", f"dataset_uri={demo_dataset}",
                 "--set", "top_k=2", "--set", "beam_runner=direct"])
    assert code == 0
    summaries = glob.glob(str(tmp_path / "root" / "**" / "summary-group-*.json"),
                          recursive=True)
    assert len(summaries) == 1
    summary = json.load(open(summaries[0]))
    assert (summary["path"], summary["runner"], summary["errors"]) == ("beam", "direct", 0)
    beam_rows = rows_in([os.path.dirname(summaries[0])])
    assert beam_rows == rows_in([one])
    resources = glob.glob(str(tmp_path / "root" / "**" / "gcp_resources"), recursive=True)
    assert [json.load(open(p)) for p in resources] == [{"resources": []}]
