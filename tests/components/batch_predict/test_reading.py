"""How batch_predict reads a task's shards: one pipeline for local shards, blocks framed in
Python, the model's block of inputs parsed as one matrix. Each must give what reading every
shard on its own gives (rows, record numbers, error rows with their offsets and reasons),
and the same answers, byte for byte."""

import dataclasses
import glob
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

from conftest import flip_byte
from tfkfp.components.batch_predict import core, reading, tfrecords, writers
from tfkfp.components.batch_predict.sources import resolve_input
from tfkfp.components.batch_predict.tfrecord_parser import make_parser, records_per_batch
from tfkfp.components.batch_predict.tfrecords import read_shards, read_tfrecords
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.common.model.predictor import BLOCKS


def shards_of(dataset):
    return sorted(glob.glob(os.path.join(dataset, "*", "*.tfrecord")))


def awkward_shards(dataset, folder):
    """The Dataset's shards beside its schema, in a folder with no manifest: a good shard, an
    empty one, one cut in the middle of a record, one with a flipped byte in its first
    record, two good ones, and one removed after it was listed."""
    os.makedirs(folder)
    shutil.copy(os.path.join(dataset, "schema.json"), folder)
    shards = shards_of(dataset)
    paths = []
    for i, source in enumerate([shards[0], None, shards[1], shards[2], shards[3], shards[0]]):
        path = os.path.join(folder, f"data-{i:02d}.tfrecord")
        if source is None:
            open(path, "wb").close()
        else:
            shutil.copy(source, path)
        paths.append(path)
    os.truncate(paths[2], os.path.getsize(paths[2]) // 2)
    flip_byte(paths[3], 0)
    return paths + [os.path.join(folder, "gone.tfrecord")]


def by_shard(items):
    """{position: [chunks]} from read_shards' stream, checking each shard ends once, in order."""
    out, ended = {}, []
    for position, chunk in items:
        assert position not in ended, f"shard {position} read after its end"
        if chunk is None:
            ended.append(position)
        else:
            out.setdefault(position, []).append(chunk)
    return out, ended


def flat(chunks):
    rows = {name: np.concatenate([c.features[name] for c in chunks if c.rows])
            for name in next((c.features for c in chunks if c.rows), {})}
    records = np.concatenate([c.records for c in chunks])
    return rows, records, [e for c in chunks for e in c.errors]


@pytest.mark.parametrize("layout", ["packed", "blocks"])
def test_shards_read_together_give_what_each_shard_gives_alone(layout, demo_dataset,
                                                               demo_blocks_dataset, tmp_path):
    dataset = demo_blocks_dataset if layout == "blocks" else demo_dataset
    paths = awkward_shards(dataset, str(tmp_path / "shards"))
    schema = Schema.load(dataset)
    parse = make_parser(list(schema.features), list(schema.keys), schema)
    per_batch = records_per_batch(250, schema)
    got, ended = by_shard(read_shards(paths, "", parse, per_batch, schema.block_rows or 1))
    assert ended == list(range(len(paths)))
    for position, path in enumerate(paths):
        alone = list(read_tfrecords(path, "", parse, per_batch))
        if not alone:
            assert position not in got  # the empty shard
            continue
        (rows, records, errors), (want_rows, want_records, want_errors) = \
            flat(got[position]), flat(alone)
        assert errors == want_errors, path
        np.testing.assert_array_equal(records, want_records)
        assert rows.keys() == want_rows.keys()
        for name in rows:
            np.testing.assert_array_equal(rows[name], want_rows[name])
    errors = [e for chunks in got.values() for c in chunks for e in c.errors]
    assert [os.path.basename(e.file) for e in errors] == \
        ["data-02.tfrecord", "data-03.tfrecord", "gone.tfrecord"]
    assert all("corrupt TFRecord shard" in e.reason for e in errors)
    assert "NotFound" in errors[-1].reason or "No such file" in errors[-1].reason


def test_blocks_are_framed_without_a_pipeline_and_other_shards_share_one(
        demo_dataset, demo_blocks_dataset, monkeypatch):
    def framed(path, parse, batch_size):
        calls.append(("framed", os.path.basename(path)))
        return iter(())

    def pipeline(paths, start, compression, parse, batch_size):
        calls.append(("pipeline", len(paths) - start))
        yield from ()
        return len(paths)

    monkeypatch.setattr(tfrecords, "_read_framed", framed)
    monkeypatch.setattr(tfrecords, "_read_from", pipeline)
    for dataset, rows in ((demo_blocks_dataset, 100), (demo_dataset, 1)):
        calls = []
        list(read_shards(shards_of(dataset), "", None, 3, rows))
        expected = [("framed", os.path.basename(p)) for p in shards_of(dataset)] \
            if rows >= tfrecords.FRAMED_ROWS else [("pipeline", 4)]
        assert calls == expected
    calls = []
    list(read_shards(shards_of(demo_blocks_dataset), "GZIP", None, 3, 100))
    assert calls == [("pipeline", 4)]  # compressed: TensorFlow inflates them


@pytest.mark.parametrize("paths, route", [
    (["file:///data/a.tfrecord", "/data/b.tfrecord"], "framed"),  # file://: a local path
    (["gs://b/a.tfrecord", "gs://b/b.tfrecord"], "pipeline"),  # TensorFlow reads gs://
    (["gs://b/a.tfrecord", "/data/b.tfrecord"], "pipeline"),
    (["s3://b/a.tfrecord", "s3://b/b.tfrecord"], "fetched"),
    (["minio://b/a.tfrecord"], "fetched"),
    (["/data/a.tfrecord", "s3://b/b.tfrecord"], "fetched"),  # one object-store shard
])
def test_where_the_shards_are_picks_how_they_are_read(paths, route, monkeypatch):
    calls = []

    def pipeline(paths, start, compression, parse, batch_size):
        calls.extend(("pipeline", path) for path in paths[start:])
        yield from ()
        return len(paths)

    monkeypatch.setattr(tfrecords, "_read_framed",
                        lambda path, *_: calls.append(("framed", path)) or iter(()))
    monkeypatch.setattr(tfrecords, "_read_from", pipeline)
    monkeypatch.setattr(tfrecords, "read_tfrecords",
                        lambda path, *_: calls.append(("fetched", path)) or iter(()))
    list(read_shards(paths, "", None, 3, tfrecords.FRAMED_ROWS))
    assert calls == [(route, path) for path in paths]


def test_the_models_block_is_parsed_as_one_matrix_with_the_same_answers(
        demo_model, demo_blocks_dataset, predictor, tmp_path, monkeypatch):
    seen = []

    def spy(features):
        seen.append(set(features))
        return predictor.predict(features)

    spied = dataclasses.replace(predictor, predict=spy)
    assert set(predictor.blocks) == {"int64"}  # the demo model's 64 pixel columns
    core.batch_predict(demo_model, demo_blocks_dataset, str(tmp_path / "block"), top_k=3,
                       predict_batch_size=300, predictor=spied)
    assert seen and all(keys == {BLOCKS["int64"]} for keys in seen)
    monkeypatch.setattr(reading, "parsed_blocks", lambda predictor, features: {})
    seen.clear()
    core.batch_predict(demo_model, demo_blocks_dataset, str(tmp_path / "columns"), top_k=3,
                       predict_batch_size=300, predictor=spied)
    assert seen and all(len(keys) == 64 for keys in seen)
    names = sorted(n for n in os.listdir(tmp_path / "block") if n.startswith("predictions-"))
    assert names and all(open(tmp_path / "block" / n, "rb").read()
                         == open(tmp_path / "columns" / n, "rb").read() for n in names)


def test_a_block_of_columns_the_data_does_not_hold_as_scalars_is_refused(demo_dataset):
    schema = Schema.load(demo_dataset)
    features = list(schema.features)
    with pytest.raises(ValueError, match="blocks hold scalar"):
        make_parser(features, [], schema, blocks={"float32": (features[0].name,)})


def test_a_schema_decides_the_layout_only_where_it_was_written_with_the_shards(
        demo_dataset, demo_columns_dataset, tmp_path, predictor, read_outputs):
    assert resolve_input(demo_dataset).layout_known
    assert resolve_input(os.path.join(demo_dataset, "train", "*.tfrecord")).layout_known
    assert not resolve_input(demo_dataset, schema_uri=demo_dataset).layout_known
    # per-column records with a packed schema copied beside them still read
    folder = tmp_path / "copied"
    folder.mkdir()
    shutil.copy(os.path.join(demo_dataset, "schema.json"), folder)
    for i, path in enumerate(shards_of(demo_columns_dataset)):
        shutil.copy(path, folder / f"{i}.tfrecord")
    pattern = str(folder / "*.tfrecord")
    assert not resolve_input(pattern).layout_known
    result = core.batch_predict("model", pattern, str(tmp_path / "out"), predictor=predictor)
    assert (result.inputs, result.errors) == (1797, 0)
    assert sorted(r["id"] for r in read_outputs(str(tmp_path / "out"))) == list(range(1797))


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_json_lines_are_the_values_buffer_of_any_string_array(kind):
    lines = pa.array(['{"a": 1}\n', '{"a": "é"}\n', '{"a": 3}\n'], kind)
    assert writers._end_to_end(lines) == b''.join(s.encode() for s in lines.to_pylist())
    assert writers._end_to_end(lines.slice(1)) == '{"a": "é"}\n{"a": 3}\n'.encode()
    with pytest.raises(ValueError, match="null"):
        writers._end_to_end(pa.array(["x\n", None], kind))


def test_class_names_are_quoted_once_and_picked_per_row():
    import json

    labels = ['say "hi"', "back\\slash", "two\nlines", "tab\there", "Größe", "plain"]
    ids = np.array([[2, 0], [4, 1], [0, 5], [3, 2]], np.int64)
    scores = np.array([[0.5, 0.25], [0.75, 0.125], [0.375, 0.0625], [1.0, 0.0]], np.float32)
    preds = writers.Predictions({}, [], ids, scores, labels, top_k=2)
    rows = [json.loads(line) for line in writers.jsonl_bytes(preds).decode().splitlines()]
    assert [r["class"] for r in rows] == [labels[i] for i in ids[:, 0]]
    assert [r["top_classes"] for r in rows] == [[labels[i] for i in row] for row in ids]
    assert [r["top_scores"] for r in rows] == scores.tolist()
