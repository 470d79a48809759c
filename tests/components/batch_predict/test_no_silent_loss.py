"""No rows lost without a word: shards named by a pattern, a folder or one file inside a
Dataset directory are checked by its manifest as the directory is; the error rows are counted
in the result and its summary, and more of them than ``max_error_fraction`` fails the run,
naming how many of how many, the limit and the errors files (after writing them)."""

import json
import os
import re
import shutil

import pytest

from conftest import cut_shard, flip_byte
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.merge import merge_predictions
from tfkfp.components.common.data.dataset import Manifest


def eval_shards(dataset):
    manifest = Manifest.load(dataset)
    return manifest.shard_files("eval", check=False), manifest.shard_records("eval")


@pytest.mark.parametrize("named", ["eval/*.tfrecord", "*/*.tfrecord", "eval", "the file"])
def test_a_shard_cut_on_a_record_boundary_is_refused_however_it_is_named(
        dataset_copy, demo_model, tmp_path, predictor, named):
    (_, shard), (_, held) = eval_shards(dataset_copy)
    _, before, after = cut_shard(shard, 40)  # every record left reads cleanly
    data = shard if named == "the file" else os.path.join(dataset_copy, named)
    out = tmp_path / "out"
    manifest = os.path.join(dataset_copy, "manifest.json")
    with pytest.raises(PredictInputError, match=re.escape(
            f"of {manifest} do not match it: {shard} is {after} bytes, expected {before} bytes "
            f"holding {held} records")):
        batch_predict(demo_model, data, str(out), predictor=predictor)
    assert not out.exists()


def test_records_the_manifest_lists_are_counted_through_a_pattern(
        dataset_copy, demo_model, tmp_path, predictor):
    (first, _), (held, _) = eval_shards(dataset_copy)
    path = os.path.join(dataset_copy, "manifest.json")
    body = json.load(open(path))
    body["splits"]["eval"]["shards"][0]["records"] = held + 5
    json.dump(body, open(path, "w"))
    result = batch_predict(demo_model, os.path.join(dataset_copy, "eval", "*.tfrecord"),
                           str(tmp_path / "out"), predictor=predictor, max_error_fraction=1.0)
    assert (result.shards[0].errors, result.shards[0].inputs) == (5, held + 5)
    assert result.shards[0].first_error.startswith(f"{first}, record {held}: record not in "
                                                   f"shard {first}: its manifest lists")


def test_a_file_the_manifest_beside_it_does_not_list_is_refused(
        dataset_copy, demo_model, tmp_path, predictor):
    (first, _), _ = eval_shards(dataset_copy)
    stray = os.path.join(dataset_copy, "eval", "extra.tfrecord")
    shutil.copy(first, stray)
    with pytest.raises(PredictInputError, match=re.escape(
            f"{stray} sits in the Dataset directory {dataset_copy}, but its manifest.json "
            "does not list it")):
        batch_predict(demo_model, os.path.join(dataset_copy, "eval", "*.tfrecord"),
                      str(tmp_path / "out"), predictor=predictor)


def test_more_error_rows_than_max_error_fraction_fail_the_run_naming_them(
        dataset_copy, demo_model, tmp_path, predictor, read_outputs):
    (first, _), records = eval_shards(dataset_copy)
    held = flip_byte(first, 40)  # 47 of the split's 165 rows are lost from here on
    out = tmp_path / "out"
    failed, total = held - 40, sum(records)
    errors_file = os.path.join(out, "errors-00000-of-00002.jsonl")
    with pytest.raises(PredictInputError) as refused:
        batch_predict(demo_model, os.path.join(dataset_copy, "eval", "*.tfrecord"), str(out),
                      predictor=predictor)
    message = str(refused.value)
    assert message.startswith(
        f"{failed} of {total} rows failed ({failed / total:.2%}), more than max_error_fraction "
        f"0.01 allows; the error rows, each with its reason, are in {errors_file} ({failed}); "
        f"the first: {first}, record 40: corrupt TFRecord shard {first}")
    assert message.endswith("Fix the input, or raise max_error_fraction to accept them")
    assert len(read_outputs(str(out), kind="errors")) == failed  # written before failing
    summary = json.load(open(out / "summary-group-00000-of-00001.json"))
    assert (summary["errors"], summary["inputs"]) == (failed, total)
    assert summary["error_fraction"] == round(failed / total, 6)


def test_error_rows_within_max_error_fraction_are_counted_and_the_run_passes(
        dataset_copy, demo_model, tmp_path, predictor):
    (first, _), records = eval_shards(dataset_copy)
    flip_byte(first, records[0] - 1)  # the shard's last record: 1 of 165 rows
    data = os.path.join(dataset_copy, "eval", "*.tfrecord")
    result = batch_predict(demo_model, data, str(tmp_path / "out"), predictor=predictor)
    assert (result.errors, result.inputs) == (1, sum(records))
    assert result.metadata()["error_fraction"] == round(1 / sum(records), 6)
    assert result.metadata()["max_error_fraction"] == 0.01
    with pytest.raises(PredictInputError, match=r"^1 of 165 rows failed \(0.61%\), more than "
                       r"max_error_fraction 0.0 allows"):
        batch_predict(demo_model, data, str(tmp_path / "strict"), predictor=predictor,
                      max_error_fraction=0.0)


def test_the_merge_applies_the_limit_to_the_rows_of_every_group(
        dataset_copy, demo_model, tmp_path, predictor):
    (first, _), records = eval_shards(dataset_copy)
    flip_byte(first, records[0] - 2)  # 2 of 165 rows: 1.2% overall, 2.3% of group 0's
    groups = [str(tmp_path / f"group{g}") for g in range(2)]
    for group, folder in enumerate(groups):
        batch_predict(demo_model, dataset_copy, folder, split="eval", file_group=group,
                      file_groups=2, predictor=predictor, max_error_fraction=1.0)
    merged = merge_predictions(groups, str(tmp_path / "all"), max_error_fraction=0.02)
    assert (merged["errors"], merged["error_fraction"]) == (2, round(2 / 165, 6))
    errors_file = os.path.join(groups[0], "errors-00000-of-00002.jsonl")
    with pytest.raises(PredictInputError, match=re.escape(
            f"2 of 165 rows failed (1.21%), more than max_error_fraction 0.01 allows; the "
            f"error rows, each with its reason, are in {errors_file} (2)")):
        merge_predictions(groups, str(tmp_path / "all-strict"))


@pytest.mark.parametrize("limit", [-0.1, 1.5])
def test_a_limit_that_is_not_a_share_fails_before_any_output(
        demo_model, demo_dataset, tmp_path, predictor, limit):
    with pytest.raises(PredictInputError, match=rf"max_error_fraction {limit} is outside "
                       r"\[0, 1\]"):
        batch_predict(demo_model, demo_dataset, str(tmp_path / "out"), predictor=predictor,
                      max_error_fraction=limit)
    assert not (tmp_path / "out").exists()
