"""The batch_prediction pipeline under the KFP local runner: the fan-out over file groups
gives the same rows as one task, and the merge step adds the counts up."""

import glob
import json
import os

import pytest
from kfp import compiler

from tfkfp.cli.main import main
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.pipelines.batch_prediction import batch_prediction


def rows_in(folders):
    rows = []
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "predictions-*.jsonl"))):
            rows += [json.loads(line) for line in open(path)]
    return sorted(rows, key=lambda r: r["id"])


def test_compiles(tmp_path):
    out = tmp_path / "batch_prediction.yaml"
    compiler.Compiler().compile(batch_prediction, str(out))
    text = out.read_text()
    assert "for-loop" in text and "merge-predictions" in text and "shard-tfrecords" in text


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
    assert "every task's outputs are under" in out
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
