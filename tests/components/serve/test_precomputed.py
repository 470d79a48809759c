"""Precomputed answers (the hybrid): batch_predict's files keyed by a column, reloaded when a
newer set appears, falling through to the model when unknown or too old."""

import json
import os
import time

import pytest

from tfkfp.components.serve.errors import PrecomputedError
from tfkfp.components.serve.options import ServeOptions
from tfkfp.components.serve.precomputed import Precomputed, key_text, load

ROW = {"id": 7, "class": "cat", "class_id": 1, "score": 0.9,
       "top_classes": ["cat", "dog"], "top_scores": [0.9, 0.1]}


def write_jsonl(folder, rows, name="predictions-00000-of-00001.jsonl", when=None):
    folder.mkdir(exist_ok=True)
    temp = folder / f".{name}.tmp"
    temp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if when is not None:
        os.utime(temp, (when, when))
    os.replace(temp, folder / name)  # as batch_predict publishes: whole files only


def test_keys_match_however_they_were_spelled():
    assert key_text(7) == key_text(7.0) == key_text("7") == "7"
    assert key_text("a,b") == "a,b" and key_text(None) is None and key_text([1]) is None


def test_jsonl_and_csv_give_the_same_answers(tmp_path):
    write_jsonl(tmp_path / "j", [ROW])
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "predictions-00000-of-00001.csv").write_text(
        "id,class,class_id,score,class_1,score_1,class_2,score_2\n"
        "7,cat,1,0.9,cat,0.9,dog,0.1\n")
    from_jsonl = Precomputed(str(tmp_path / "j"), "id", 2, reload_s=0).answer({"id": 7})
    from_csv = Precomputed(str(tmp_path / "c"), "id", 2, reload_s=0).answer({"id": 7})
    assert from_jsonl.pop("precomputed") and from_jsonl.pop("computed_at")
    assert from_jsonl == ROW
    assert {**from_csv, "id": 7} == {**from_jsonl, "precomputed": True,
                                     "computed_at": from_csv["computed_at"]}


@pytest.mark.parametrize("rows,top_k,words", [
    ([{"user": 1, "class": "a", "class_id": 0, "score": 1.0}], 1,
     "line 1: no key column 'id'; its columns are ['class', 'class_id', 'score', 'user']"),
    ([ROW, {"id": 8, "score": 0.5}], 1, "line 2: not a prediction row"),
    ([{**ROW, "top_classes": ["cat"]}], 2, "line 1: 1 top classes, but the server answers top 2"),
])
def test_a_set_that_cannot_answer_is_refused_naming_file_and_line(tmp_path, rows, top_k,
                                                                  words):
    write_jsonl(tmp_path, rows)
    with pytest.raises(PrecomputedError, match="predictions-00000-of-00001.jsonl, " + words
                       .replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        load(str(tmp_path), "id", top_k)


def test_an_empty_folder_is_refused(tmp_path):
    with pytest.raises(PrecomputedError, match="no predictions-\\*.jsonl"):
        load(str(tmp_path), "id", 1)


def test_answers_carry_their_age_and_a_newer_set_replaces_them_whole(tmp_path):
    write_jsonl(tmp_path, [ROW, {**ROW, "id": 8}], when=1_700_000_000)
    hybrid = Precomputed(str(tmp_path), "id", 2, reload_s=0)
    answer = hybrid.answer({"id": "7", "x": 1.0})
    assert answer == {**ROW, "precomputed": True, "computed_at": "2023-11-14T22:13:20+00:00"}
    assert hybrid.answer({"id": 9}) is None and hybrid.answer({"x": 1.0}) is None
    assert not hybrid.reload()  # nothing changed

    write_jsonl(tmp_path, [{**ROW, "class": "dog", "class_id": 0}])
    assert hybrid.reload()
    assert hybrid.answer({"id": 7})["class"] == "dog"
    assert hybrid.answer({"id": 8}) is None  # the whole set was replaced


def test_a_broken_newer_set_keeps_the_old_one(tmp_path):
    write_jsonl(tmp_path, [ROW])
    hybrid = Precomputed(str(tmp_path), "id", 1, reload_s=0)
    (tmp_path / "predictions-00001-of-00002.jsonl").write_text("{not json\n")
    assert not hybrid.reload()
    assert hybrid.answer({"id": 7})["class"] == "cat"


def test_answers_older_than_the_limit_fall_through(tmp_path):
    write_jsonl(tmp_path, [ROW], when=time.time() - 3600)
    assert Precomputed(str(tmp_path), "id", 1, max_age_s=60, reload_s=0).answer(
        {"id": 7}) is None
    assert Precomputed(str(tmp_path), "id", 1, max_age_s=7200, reload_s=0).answer(
        {"id": 7}) is not None


def test_precomputed_needs_its_key_column():
    from tfkfp.components.serve.errors import ServeOptionsError

    with pytest.raises(ServeOptionsError, match="precomputed and precomputed_key go together"):
        ServeOptions(precomputed="preds/")


@pytest.mark.slow
def test_the_server_answers_known_keys_from_the_set_and_the_rest_from_the_model(
        string_table, tmp_path):
    from serve_process import running
    from string_tables import probe_rows

    from tfkfp.components.batch_predict.core import batch_predict

    probe = probe_rows()
    rows = [{"id": i, "x": None if x != x else float(x), "colour": c.decode()}
            for i, (x, c) in enumerate(zip(probe["x"], probe["colour"]))]
    half = len(rows) // 2
    (tmp_path / "known.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:half]))
    batch_predict(string_table.model, str(tmp_path / "known.jsonl"), str(tmp_path / "preds"),
                  keys=["id"], top_k=2, schema_uri=string_table.dataset)
    stored = {r["id"]: r for f in (tmp_path / "preds").glob("predictions-*.jsonl")
              for r in map(json.loads, f.read_text().splitlines())}
    with running(string_table.model, "--top-k", "2", "--keys", "id", "--precomputed",
                 str(tmp_path / "preds"), "--precomputed-key", "id", "--precomputed-reload",
                 "0.2", tmp_path=tmp_path) as server:
        status, body = server.v1(rows)
        assert status == 200, body
        answers = body["predictions"]
        assert [a["id"] for a in answers] == [r["id"] for r in rows]  # request order kept
        for answer in answers[:half]:
            assert answer.pop("precomputed") is True and answer.pop("computed_at")
            assert answer == stored[answer["id"]]
        assert not any("precomputed" in a for a in answers[half:])
        assert server.metric("tfkfp_precomputed_answers_total") == half

        newer = {**stored[0], "class": "relabelled", "class_id": 0}
        write_jsonl(tmp_path / "preds", [newer], name="predictions-00000-of-00001.jsonl")
        for extra in (tmp_path / "preds").glob("predictions-0000[1-9]-*.jsonl"):
            extra.unlink()
        deadline = time.monotonic() + 60  # the reload thread looks every 0.2 s
        while server.v1(rows[:1])[1]["predictions"][0]["class"] != "relabelled":
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.1)
        assert "precomputed" not in server.v1(rows[1:2])[1]["predictions"][0]
