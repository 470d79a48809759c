"""batch_predict on the demo model and data: the rows equal a direct call of the model, in
every output format, for TFRecords, CSV and the TFLite model, one group or several."""

import glob
import json
import os
import shutil

import numpy as np
import pytest

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.merge import merge_predictions
from tfkfp.components.common.data.dataset import split_files
from tfkfp.components.common.model.ranking import top_k_of


def all_files(dataset):
    return split_files(dataset, "train")[0] + split_files(dataset, "eval")[0]


def test_predictions_equal_a_direct_call_of_the_model(demo_model, demo_dataset, tmp_path,
                                                      read_outputs, direct_predictions):
    result = batch_predict(demo_model, demo_dataset, str(tmp_path / "out"), top_k=3,
                           predict_batch_size=100)
    ids, probs = direct_predictions(all_files(demo_dataset))
    rows = read_outputs(str(tmp_path / "out"))
    assert (result.inputs, result.predictions, result.errors) == (1797, 1797, 0)
    assert [r["id"] for r in rows] == ids.tolist()  # same order: shard by shard
    best, scores = top_k_of(probs, 3)
    assert [r["class_id"] for r in rows] == best[:, 0].tolist()
    assert [r["class"] for r in rows] == [str(i) for i in best[:, 0]]  # labels 0..9
    np.testing.assert_allclose([r["top_scores"] for r in rows], scores, rtol=1e-5, atol=1e-6)
    assert [r["top_classes"] for r in rows] == [[str(i) for i in b] for b in best]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(
        [f"{kind}-{i:05d}-of-00004.jsonl" for kind in ("predictions", "errors") for i in range(4)]
        + ["summary-group-00000-of-00001.json"])


@pytest.mark.parametrize("fmt", ["csv", "tfrecord"])
def test_every_output_format_holds_the_same_rows(demo_model, demo_dataset, tmp_path,
                                                 read_outputs, fmt, predictor):
    batch_predict(demo_model, demo_dataset, str(tmp_path / "jsonl"), top_k=2,
                  predictor=predictor)
    batch_predict(demo_model, demo_dataset, str(tmp_path / fmt), output_format=fmt, top_k=2,
                  predictor=predictor)
    want = read_outputs(str(tmp_path / "jsonl"))
    got = read_outputs(str(tmp_path / fmt), fmt)
    assert len(got) == len(want) == 1797
    for a, b in zip(want, got):
        assert int(b["id"]) == a["id"] and int(b["class_id"]) == a["class_id"]
        assert b["class"] == a["class"]
        assert np.float32(b["score"]) == np.float32(a["score"])
        if fmt == "csv":
            assert [b["class_1"], b["class_2"]] == a["top_classes"]
        else:
            assert b["top_classes"] == a["top_classes"]


def test_rerun_overwrites_with_identical_output(demo_model, demo_dataset, tmp_path, predictor):
    out = str(tmp_path / "out")
    batch_predict(demo_model, demo_dataset, out, output_format="csv", predictor=predictor)
    first = {p: open(p, "rb").read() for p in glob.glob(os.path.join(out, "*-of-*.csv"))}
    batch_predict(demo_model, demo_dataset, out, output_format="csv", predictor=predictor)
    second = {p: open(p, "rb").read() for p in glob.glob(os.path.join(out, "*-of-*.csv"))}
    assert first == second and len(first) == 8
    assert not [n for n in os.listdir(out) if n.startswith(".")]  # no temporary files left
    batch_predict(demo_model, demo_dataset, out, split="eval", predictor=predictor)  # other
    # format and layout: the earlier files go
    assert sorted(n.rsplit(".", 1)[1] for n in os.listdir(out)) == ["json"] + ["jsonl"] * 4


def test_shard_groups_split_the_work_and_merge_adds_up(demo_model, demo_dataset, tmp_path,
                                                       read_outputs, predictor):
    whole = batch_predict(demo_model, demo_dataset, str(tmp_path / "whole"), predictor=predictor)
    parts = [batch_predict(demo_model, demo_dataset, str(tmp_path / f"g{g}"), file_group=g,
                           file_groups=3, predictor=predictor) for g in range(3)]
    assert [len(p.shards) for p in parts] == [2, 1, 1]  # 4 shards dealt to 3 groups
    assert sorted(os.listdir(tmp_path / "g1")) == [
        "errors-00001-of-00004.jsonl", "predictions-00001-of-00004.jsonl",
        "summary-group-00001-of-00003.json"]
    rows = sorted((r for g in range(3) for r in read_outputs(str(tmp_path / f"g{g}"))),
                  key=lambda r: r["id"])
    assert rows == sorted(read_outputs(str(tmp_path / "whole")), key=lambda r: r["id"])
    merged = merge_predictions([str(tmp_path / f"g{g}") for g in range(3)],
                               str(tmp_path / "all"))
    assert (merged["inputs"], merged["predictions"], merged["errors"]) == (
        whole.inputs, whole.predictions, 0)
    assert merged["groups"] == 3 and merged["shards_done"] == merged["num_shards"] == 4
    # one throughput figure: rows over the time spent on them, the groups side by side
    busy = max(p.busy_seconds for p in parts)
    assert merged["records_per_second"] == pytest.approx(whole.inputs / busy, rel=1e-3)
    meta = whole.metadata()
    assert 0 < meta["busy_seconds"] <= meta["seconds"]
    assert meta["records_per_second"] == pytest.approx(whole.inputs / whole.busy_seconds,
                                                       rel=1e-3)
    for g in range(3):  # the gathered Dataset reads without the groups' own folders
        shutil.rmtree(tmp_path / f"g{g}")
    assert sorted(read_outputs(str(tmp_path / "all")), key=lambda r: r["id"]) == rows
    summary = json.load(open(tmp_path / "all" / "summary.json"))
    assert summary["predictions"] == whole.predictions
    assert {s["predictions_file"] for s in summary["shards"]} == {
        f"predictions-{i:05d}-of-00004.jsonl" for i in range(4)}


def test_tflite_path_agrees_with_the_savedmodel_path(demo_model, demo_dataset, tflite_bundle,
                                                     tmp_path, read_outputs, predictor):
    saved = batch_predict(demo_model, demo_dataset, str(tmp_path / "saved"), top_k=10,
                          predictor=predictor)
    lite = batch_predict(tflite_bundle, demo_dataset, str(tmp_path / "lite"), top_k=10,
                         threads=2)
    assert lite.model["kind"] == "tflite" and saved.model["kind"] == "savedmodel"
    a, b = read_outputs(str(tmp_path / "saved")), read_outputs(str(tmp_path / "lite"))
    assert [r["id"] for r in a] == [r["id"] for r in b]
    assert np.mean([x["class_id"] == y["class_id"] for x, y in zip(a, b)]) > 0.995
    order = [np.argsort(r["top_classes"]) for r in a], [np.argsort(r["top_classes"]) for r in b]
    pa = np.array([np.array(r["top_scores"])[o] for r, o in zip(a, order[0])])
    pb = np.array([np.array(r["top_scores"])[o] for r, o in zip(b, order[1])])
    np.testing.assert_allclose(pa, pb, atol=1e-4)


def test_bare_tflite_file_takes_its_labels_file(tflite_bundle, demo_dataset, tmp_path,
                                                demo_model):
    result = batch_predict(os.path.join(tflite_bundle, "model.tflite"), demo_dataset,
                           str(tmp_path / "out"), split="eval",
                           labels_uri=os.path.join(demo_model, "assets", "labels.txt"))
    assert result.predictions == result.inputs > 0


def test_csv_and_jsonl_input_give_the_tfrecord_predictions(demo_model, demo_dir, demo_dataset,
                                                           tmp_path, read_outputs, predictor):
    batch_predict(demo_model, demo_dataset, str(tmp_path / "tfr"), predictor=predictor)
    from_csv = batch_predict(demo_model, demo_dir.csv, str(tmp_path / "csv"), keys=["id"],
                             predict_batch_size=500, predictor=predictor)
    header = open(demo_dir.csv).readline().strip().split(",")
    jsonl = tmp_path / "digits.jsonl"
    with open(jsonl, "w") as f:
        for line in list(open(demo_dir.csv))[1:]:
            f.write(json.dumps(dict(zip(header, map(int, line.split(","))))) + "\n")
    batch_predict(demo_model, str(jsonl), str(tmp_path / "json"), keys=["id"],
                  predictor=predictor)
    want = sorted(read_outputs(str(tmp_path / "tfr")), key=lambda r: r["id"])
    assert from_csv.predictions == 1797 and from_csv.errors == 0
    for folder in ("csv", "json"):
        got = read_outputs(str(tmp_path / folder))  # the CSV is in id order
        assert [(r["id"], r["class_id"]) for r in got] == [(r["id"], r["class_id"]) for r in want]
        np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in want],
                                   rtol=1e-5)  # other batches: last-bit differences
