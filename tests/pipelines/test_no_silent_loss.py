"""Error rows in a pipeline run: the console line says how many rows failed, the merge fails
the run when more than max_error_fraction of all the groups' rows did (naming the groups'
errors files), and shards named by a pattern are checked by their Dataset's manifest."""

import os
import re

import pytest

from conftest import cut_shard, flip_byte
from tfkfp.cli import figures, local_run
from tfkfp.cli.main import main
from tfkfp.components.common.data.dataset import Manifest


def test_the_console_line_says_how_many_rows_failed():
    class Output:
        metadata = {"inputs": 1797, "predictions": 1796, "errors": 1, "error_fraction": 0.000556}

    assert figures.key_figures({"predictions": Output()}) == (
        "1,796 predictions, 1 errors, 0.06% of rows failed")
    Output.metadata = {**Output.metadata, "predictions": 1797, "errors": 0, "error_fraction": 0}
    assert figures.key_figures({"predictions": Output()}) == "1,797 predictions, 0 errors"


def predict(model, dataset, root):
    return ["run", "batch_prediction", "--local", "--pipeline-root", str(root),
            "--set", f"model_uri={model}", "--set", f"dataset_uri={dataset}"]


@pytest.mark.slow
def test_a_flipped_byte_passes_counted_under_the_limit_and_fails_the_run_over_it(
        dataset_copy, demo_model, tmp_path, capsys):
    first = Manifest.load(dataset_copy).shard_files("eval")[0]
    held = flip_byte(first, 0)  # the whole shard is lost: 82 of 1,797 rows, 4.6%
    code = main(predict(demo_model, dataset_copy, tmp_path / "under")
                + ["--set", "max_error_fraction=0.05"])
    out = capsys.readouterr().out
    assert code == 0
    done = [line for line in out.splitlines() if line.startswith("done   ")]
    shown = f"{1797 - held:,} predictions, {held} errors, {held / 1797:.2%} of rows failed"
    assert any(line.startswith("done   batch-predict") and shown in line for line in done)
    assert any(line.startswith("done   merge-predictions") and shown in line for line in done)

    with pytest.raises(local_run.TaskFailed) as failed:
        local_run.run_local("batch_prediction", {"model_uri": demo_model,
                                                 "dataset_uri": dataset_copy},
                            str(tmp_path / "over"), console=open(os.devnull, "w"))
    task, _, message = str(failed.value).partition(": ")
    assert figures.step_of(task) == "merge-predictions"  # over all the groups' rows
    assert message.startswith(f"{held} of 1,797 rows failed "
                              f"({held / 1797:.2%}), more than max_error_fraction 0.01 allows; "
                              "the error rows, each with its reason, are in ")
    (errors_file,) = re.findall(r"are in (\S+) \(", message)
    assert os.path.exists(errors_file) and "batch-predict" in errors_file  # the group's own
    assert f"the first: {first}, record 0: corrupt TFRecord shard" in message


@pytest.mark.slow
def test_a_truncated_shard_given_as_a_pattern_is_refused_by_the_step(
        dataset_copy, demo_model, tmp_path, capsys):
    shard = Manifest.load(dataset_copy).shard_files("train")[0]
    held = Manifest.load(dataset_copy).shard_records("train")[0]
    _, before, after = cut_shard(shard, held - 500)  # 500 rows gone, every record whole
    pattern = os.path.join(dataset_copy, "train", "*.tfrecord")
    assert main(predict(demo_model, pattern, tmp_path / "root")) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.sub(r"batch-predict-\d+:", "batch-predict:", last).startswith(
        f"tfkfp run: error: batch-predict: 1 shard(s) of "
        f"{os.path.join(dataset_copy, 'manifest.json')} do not match it: {shard} is {after} "
        f"bytes, expected {before} bytes holding {held} records")
