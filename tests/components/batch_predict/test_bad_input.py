"""Bad input to batch_predict: bad records go to the errors file with their reason and the
run finishes (inputs = predictions + errors); a truncated shard is reported with its file
name and offset; a Dataset's shard that disagrees with its manifest is named (its size
before reading, its record count as it is read); bad options and a model/data mismatch
fail before any output exists."""

import json
import os
import re
import shutil

import pytest
import tensorflow as tf

from conftest import cut_shard_of
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common.data.dataset import Manifest

FRAME = 16  # bytes around every TFRecord


def records_of(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(path)]


def edited(record, drop=None, as_float=None):
    example = tf.train.Example.FromString(record)
    if drop:
        del example.features.feature[drop]
    if as_float:
        value = example.features.feature[as_float].int64_list.value[0]
        example.features.feature[as_float].CopyFrom(
            tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)])))
    return example.SerializeToString()


def write_records(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


@pytest.fixture
def bad_shards(demo_columns_dataset, columns_eval_files, tmp_path):
    """Two shards beside the dataset's schema (one feature per column, so single columns can
    be dropped or retyped): one with three bad records mixed in at records 5, 10 and 20, one
    truncated in the middle of its record 30."""
    folder = tmp_path / "bad"
    folder.mkdir()
    shutil.copy(os.path.join(demo_columns_dataset, "schema.json"), folder / "schema.json")
    good = records_of(columns_eval_files[0])
    mixed = good[:5] + [b"not an Example"] + good[5:9] + [edited(good[9], drop="pixel_3")] + \
        good[9:18] + [edited(good[18], as_float="pixel_7")] + good[18:]
    write_records(folder / "data-00000.tfrecord", mixed)
    second = records_of(columns_eval_files[1])
    whole = open(write_records(folder / "full.tmp", second), "rb").read()
    cut = sum(len(r) + FRAME for r in second[:30])
    (folder / "data-00001.tfrecord").write_bytes(whole[:cut + 20])
    os.remove(folder / "full.tmp")
    return folder, mixed, second, cut


def test_bad_records_go_to_the_errors_file_and_the_counts_add_up(
        bad_shards, demo_model, tmp_path, read_outputs, predictor):
    folder, mixed, second, cut = bad_shards
    out = str(tmp_path / "out")
    result = batch_predict(demo_model, str(folder / "*.tfrecord"), out, predictor=predictor,
                           max_error_fraction=1.0)
    first, broken = result.shards
    assert (first.inputs, first.predictions, first.errors) == (len(mixed), len(mixed) - 3, 3)
    assert (broken.inputs, broken.predictions, broken.errors) == (31, 30, 1)
    assert result.inputs == result.predictions + result.errors
    errors = read_outputs(out, kind="errors")
    assert [e["record"] for e in errors] == [5, 10, 20, 30]
    assert errors[0]["offset"] == sum(len(r) + FRAME for r in mixed[:5])
    assert errors[0]["file"].endswith("data-00000.tfrecord")
    assert "does not parse" in errors[0]["reason"]
    assert "pixel_3" in errors[1]["reason"] and "pixel_7" in errors[2]["reason"]
    assert errors[3]["file"].endswith("data-00001.tfrecord") and errors[3]["offset"] == cut
    assert f"offset {cut}" in errors[3]["reason"] and "corrupt" in errors[3]["reason"]
    ids = [r["id"] for r in read_outputs(out)]
    assert len(ids) == result.predictions == len(set(ids))


def test_good_records_among_bad_ones_predict_as_in_a_clean_run(
        bad_shards, demo_model, columns_eval_files, tmp_path, read_outputs, direct_predictions,
        predictor):
    folder, *_ = bad_shards
    batch_predict(demo_model, str(folder / "*.tfrecord"), str(tmp_path / "out"),
                  predict_batch_size=7, predictor=predictor, max_error_fraction=1.0)
    ids, probs = direct_predictions(columns_eval_files[:1])
    want = dict(zip(ids.tolist(), probs.argmax(axis=1).tolist()))
    got = {r["id"]: r["class_id"] for r in read_outputs(str(tmp_path / "out"))}
    assert all(got[i] == want[i] for i in want)


def test_bad_csv_lines_are_errors_with_line_numbers(demo_model, demo_dir, tmp_path,
                                                    read_outputs, predictor):
    lines = open(demo_dir.csv).read().splitlines(keepends=True)
    lines[3] = lines[3].replace(",", ",x,", 1)  # one column too many and not a number
    lines[7] = "7,1,2\n"  # too few columns
    lines[9] = ",".join(v if i != 5 else "" for i, v in enumerate(lines[9].split(",")))
    path = tmp_path / "bad.csv"
    path.write_text("".join(lines))
    result = batch_predict(demo_model, str(path), str(tmp_path / "out"), keys=["id"],
                           predictor=predictor)
    errors = read_outputs(str(tmp_path / "out"), kind="errors")
    assert [e["record"] for e in errors] == [4, 8, 10]  # line numbers, the header is line 1
    assert errors[0]["offset"] == sum(len(x) for x in lines[:3])
    assert "missing value" in errors[2]["reason"] and "pixel_4" in errors[2]["reason"]
    assert result.inputs == len(lines) - 1 == result.predictions + 3


def test_a_model_data_mismatch_fails_before_any_output(demo_columns_dataset, columns_eval_files,
                                                       demo_model, tmp_path, predictor):
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(columns_eval_files[0], folder / "data-00000.tfrecord")
    schema = json.load(open(os.path.join(demo_columns_dataset, "schema.json")))
    for col in schema["columns"]:
        if col["name"] == "pixel_5":
            col["dtype"] = "float32"
    (folder / "schema.json").write_text(json.dumps(schema))
    out = tmp_path / "out"
    with pytest.raises(PredictInputError, match=r"input 'pixel_5' expects int64\[\], but the "
                       r"data .* has float32\[\]"):
        batch_predict(demo_model, str(folder / "*.tfrecord"), str(out), predictor=predictor)
    schema["columns"] = [{**c, "dtype": "int64"} for c in schema["columns"]
                         if c["name"] != "pixel_9"]
    (folder / "schema.json").write_text(json.dumps(schema))
    with pytest.raises(PredictInputError, match="needs input 'pixel_9'"):
        batch_predict(demo_model, str(folder / "*.tfrecord"), str(out), predictor=predictor)
    assert not out.exists()


@pytest.mark.parametrize("options,message", [
    ({"output_format": "parquet"}, "output_format 'parquet' is not one of jsonl, csv, tfrecord"),
    ({"file_group": 2, "file_groups": 2}, "file group 2 of 2 is not valid"),
    ({"top_k": 11}, "top_k 11 is more than the model's 10 classes"),
    ({"keys": ["colour"]}, "key column 'colour' is not in the data"),
    ({"keys": ["score"]}, "key column 'score' would clash"),
    ({"split": "test"}, r"has no split 'test'; it has \['train', 'eval'\]"),
])
def test_bad_options_fail_before_any_output(demo_model, demo_dataset, tmp_path, options,
                                            message, predictor):
    with pytest.raises(PredictInputError, match=message):
        batch_predict(demo_model, demo_dataset, str(tmp_path / "out"), predictor=predictor,
                      **options)
    assert not (tmp_path / "out").exists()


def test_a_folder_that_is_not_a_model(demo_dataset, tmp_path):
    with pytest.raises(PredictInputError, match="neither saved_model.pb .* nor model.tflite"):
        batch_predict(demo_dataset, demo_dataset, str(tmp_path / "out"))


def test_a_shard_cut_on_a_record_boundary_fails_naming_it_before_any_output(
        dataset_copy, demo_model, tmp_path, predictor):
    refusal = cut_shard_of(dataset_copy, "eval", 1, 40)
    out = tmp_path / "out"
    with pytest.raises(PredictInputError, match=refusal):
        batch_predict(demo_model, dataset_copy, str(out), split="eval", predictor=predictor)
    assert not out.exists()
    result = batch_predict(demo_model, dataset_copy, str(out), split="eval", file_group=0,
                           file_groups=2, predictor=predictor)  # a group without it
    assert result.inputs == result.predictions > 0 and result.errors == 0


def set_shard_records(dataset, split, index, records):
    path = os.path.join(dataset, "manifest.json")
    body = json.load(open(path))
    body["splits"][split]["shards"][index]["records"] = records
    json.dump(body, open(path, "w"))


def test_records_the_manifest_lists_but_the_shard_lacks_are_errors_naming_it(
        dataset_copy, demo_model, tmp_path, read_outputs, predictor):
    shard = Manifest.load(dataset_copy).shard_files("eval")[0]
    held = Manifest.load(dataset_copy).shard_records("eval")[0]
    set_shard_records(dataset_copy, "eval", 0, held + 5)
    out = str(tmp_path / "out")
    result = batch_predict(demo_model, dataset_copy, out, split="eval", predictor=predictor,
                           max_error_fraction=1.0)
    first = result.shards[0]
    assert (first.inputs, first.predictions, first.errors) == (held + 5, held, 5)
    assert result.inputs == result.predictions + result.errors == sum(
        Manifest.load(dataset_copy).shard_records("eval"))
    errors = read_outputs(out, kind="errors")
    assert [e["record"] for e in errors] == list(range(held, held + 5))
    assert errors[0]["file"] == shard and errors[0]["reason"] == (
        f"record not in shard {shard}: its manifest lists {held + 5} records, the shard "
        f"yielded {held}")
    set_shard_records(dataset_copy, "eval", 0, held - 1)
    with pytest.raises(PredictInputError, match=f"shard {re.escape(shard)} yielded {held} "
                       f"records but its manifest lists {held - 1}"):
        batch_predict(demo_model, dataset_copy, out, split="eval", predictor=predictor)


def test_a_csv_header_naming_a_column_twice_is_refused_before_any_output(tmp_path):
    from tfkfp.components.batch_predict.text import check_columns
    from tfkfp.components.common.data.schema import Column

    path = tmp_path / "twice.csv"
    path.write_text("id,a,a\n1,2,3\n")
    with pytest.raises(PredictInputError, match=r"twice\.csv: the header names column\(s\) "
                                                r"\['a'\] more than once"):
        check_columns(str(path), "csv", [Column("a", "float32")])
