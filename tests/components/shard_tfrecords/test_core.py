import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import write_csv
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.shard_tfrecords import sources
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats import text


def read_split(out, split, mode="predict"):
    """All rows of a split as {column: array}, sorted by the first key column."""
    schema = Schema.load(out)
    rows = {}
    for features, extra in make_dataset(out, mode=mode, split=split, batch_size=64):
        for name, value in {**features, **extra}.items():
            rows.setdefault(name, []).append(value.numpy())
    if not rows:
        return {}
    rows = {k: np.concatenate(v) for k, v in rows.items()}
    if schema.keys:
        order = np.argsort(rows[schema.keys[0].name], kind="stable")
        rows = {k: v[order] for k, v in rows.items()}
    return rows


def shard_bytes(out):
    found = {}
    for split in ("train", "eval"):
        for name in sorted(os.listdir(os.path.join(out, split))):
            with open(os.path.join(out, split, name), "rb") as f:
                found[f"{split}/{name}"] = f.read()
    return found


def test_csv_round_trip_gives_exactly_the_input_rows(table_csv, tmp_path):
    path, rows = table_csv
    out = str(tmp_path / "ds")
    result = shard_tfrecords(path, out, label="animal", keys=["id"], eval_fraction=0.2)
    assert result.total_records == len(rows)
    assert 0 < result.records["eval"] < len(rows)
    schema = Schema.load(out)
    assert schema.label.vocabulary == ("cat", "dog")
    assert [c.name for c in schema.keys] == ["id"]
    assert {c.name: c.dtype for c in schema.features} == {
        "x": "float32", "y": "float32", "color": "string"}
    # predict mode carries keys; train/eval modes carry label indices: check both
    seen = {}
    for split in ("train", "eval"):
        got = read_split(out, split)
        for i, key in enumerate(got["id"]):
            seen[int(key)] = (got["x"][i], got["y"][i], got["color"][i].decode())
    assert sorted(seen) == list(range(len(rows)))
    for row in rows:
        assert seen[row[0]] == (np.float32(row[1]), np.float32(row[2]), row[3])
    labels = np.concatenate([lab.numpy() for _, lab in make_dataset(out, mode="eval")])
    assert set(labels.tolist()) <= {0, 1} and len(labels) == result.records["eval"]


def test_the_rate_is_the_steps_own_throughput_not_its_start_up(table_csv, tmp_path):
    """The console and the UI's Metrics show one rate: records over the time spent reading,
    encoding and writing them, not the checks and start-up before."""
    path, rows = table_csv
    result = shard_tfrecords(path, str(tmp_path / "ds"), label="animal", keys=["id"])
    meta = result.metadata()
    assert 0 < meta["busy_seconds"] < meta["seconds"]
    assert meta["records_per_second"] == pytest.approx(
        result.total_records / result.busy_seconds, rel=1e-3)


def test_manifest_lists_every_shard_with_counts_and_checksums(table_csv, tmp_path):
    import google_crc32c

    out = str(tmp_path / "ds")
    result = shard_tfrecords(table_csv[0], out, label="animal", num_shards=3)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    for split in ("train", "eval"):
        shards = manifest["splits"][split]["shards"]
        assert [s["file"] for s in shards] == [
            f"{split}/data-{k:05d}-of-00003.tfrecord" for k in range(3)]
        assert sum(s["records"] for s in shards) == result.records[split]
        for s in shards:
            blob = open(os.path.join(out, s["file"]), "rb").read()
            assert s["bytes"] == len(blob)
            assert s["crc32c"] == google_crc32c.Checksum(blob).hexdigest().decode()
    assert not [n for n in os.listdir(out) if n.startswith(".")]


def test_same_input_gives_byte_identical_shards(table_csv, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shard_tfrecords(table_csv[0], a, label="animal", keys=["id"])
    shard_tfrecords(table_csv[0], b, label="animal", keys=["id"])
    assert shard_bytes(a) == shard_bytes(b)


@pytest.mark.slow
def test_parallel_workers_give_the_same_shards_as_one(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    rows = [[i, *np.round(rng.normal(size=8), 3), i % 3] for i in range(6000)]
    path = write_csv(tmp_path / "big.csv", ["id"] + [f"f{j}" for j in range(8)] + ["label"],
                     rows)
    monkeypatch.setattr(text, "CHUNK_BYTES", 50_000)
    assert len(sources.plan_chunks("csv", [path])) > 4
    one = str(tmp_path / "one")
    many = str(tmp_path / "many")
    shard_tfrecords(path, one, label="label", keys=["id"], threads=1)
    shard_tfrecords(path, many, label="label", keys=["id"], threads=2)
    assert shard_bytes(one) == shard_bytes(many)
    assert sum(read_split(many, s)["id"].size for s in ("train", "eval")) == 6000


def test_gzip_shards_read_back(table_csv, tmp_path):
    out = str(tmp_path / "gz")
    result = shard_tfrecords(table_csv[0], out, label="animal", keys=["id"],
                             compression="gzip")
    assert all(i.file.endswith(".tfrecord.gz") for i in result.shards["train"])
    got = read_split(out, "train")
    assert len(got["id"]) == result.records["train"]


def test_shard_counts_follow_size_minimum_and_explicit_count(table_csv, tmp_path):
    path = table_csv[0]
    by_min = shard_tfrecords(path, str(tmp_path / "a"), label="animal", min_shards=4)
    assert {s: len(v) for s, v in by_min.shards.items()} == {"train": 4, "eval": 4}
    by_size = shard_tfrecords(path, str(tmp_path / "b"), label="animal", min_shards=1,
                              shard_size_mb=0.005)
    payload = by_size.bytes["train"] - 16 * by_size.records["train"]  # less TFRecord framing
    assert len(by_size.shards["train"]) == -(-payload // 5242)
    counts = [s.records for s in by_size.shards["train"]]
    assert max(counts) - min(counts) <= 1


def test_split_column_decides_the_split(tmp_path):
    rows = [[i, float(i), "test" if i % 4 == 0 else "train", i % 2] for i in range(40)]
    path = write_csv(tmp_path / "s.csv", ["id", "x", "fold", "label"], rows)
    out = str(tmp_path / "ds")
    result = shard_tfrecords(path, out, label="label", keys=["id"], split_column="fold")
    assert result.records == {"train": 30, "eval": 10}
    assert sorted(read_split(out, "eval")["id"].tolist()) == list(range(0, 40, 4))
    assert "fold" not in Schema.load(out).names


def test_jsonl_parquet_and_npz_inputs(tmp_path):
    ids = np.arange(50)
    vec = np.arange(150, dtype=np.float32).reshape(50, 3)
    labels = np.array(["a", "b"] * 25)
    with open(tmp_path / "d.jsonl", "w") as f:
        for i in ids:
            f.write(json.dumps({"id": int(i), "vec": vec[i].tolist(), "label": labels[i]}) + "\n")
    pq.write_table(pa.table({"id": ids, "vec": pa.array(list(vec), pa.list_(pa.float32())),
                             "label": labels}), tmp_path / "d.parquet", row_group_size=20)
    np.savez(tmp_path / "d.npz", id=ids, vec=vec, label=labels)
    for name in ("d.jsonl", "d.parquet", "d.npz"):
        out = str(tmp_path / f"out-{name}")
        shard_tfrecords(str(tmp_path / name), out, label="label", keys=["id"])
        assert Schema.load(out).column("vec").shape == (3,)
        got = {s: read_split(out, s) for s in ("train", "eval")}
        all_ids = np.concatenate([got[s]["id"] for s in got if got[s]])
        all_vec = np.concatenate([got[s]["vec"] for s in got if got[s]])
        np.testing.assert_array_equal(all_vec[np.argsort(all_ids)], vec)


def test_image_folder(demo_dir, tmp_path):
    out = str(tmp_path / "img")
    result = shard_tfrecords(demo_dir.images, out)
    assert result.total_records == demo_dir.rows
    schema = Schema.load(out)
    assert schema.column("image").image_shape == (8, 8, 1)
    assert schema.label.vocabulary == tuple(str(d) for d in range(10))
    features, labels = next(iter(make_dataset(out, mode="eval", batch_size=16)))
    assert features["image"].shape == (16, 8, 8, 1)
    assert 0.0 <= float(features["image"].numpy().min()) <= 1.0
    assert labels.dtype.name == "int64"


def test_file_groups_take_every_nth_file(tmp_path):
    for k in range(4):
        write_csv(tmp_path / f"part-{k}.csv", ["id", "x", "label"],
                  [[k * 10 + i, i, i % 2] for i in range(10)])
    out = str(tmp_path / "g1")
    result = shard_tfrecords(str(tmp_path / "part-*.csv"), out, label="label", keys=["id"],
                             file_group=1, file_groups=2)
    assert result.input_files == 2
    ids = np.concatenate([read_split(out, s)["id"] for s in ("train", "eval")])
    assert sorted(ids.tolist()) == list(range(10, 20)) + list(range(30, 40))


def test_failed_run_keeps_earlier_output_and_leaves_nothing_new(tmp_path):
    rows = [[i, i * 0.5, i % 2] for i in range(1500)]  # past the rows that types come from
    path = write_csv(tmp_path / "t.csv", ["id", "x", "label"], rows)
    out = str(tmp_path / "ds")
    shard_tfrecords(path, out, label="label", keys=["id"])
    before = shard_bytes(out)
    with open(path, "a") as f:
        f.write("1500,notanumber,0\n")
    with pytest.raises(ShardInputError, match="line 1502, column 'x': found 'notanumber'"):
        shard_tfrecords(path, out, label="label", keys=["id"])
    assert shard_bytes(out) == before
    assert sorted(os.listdir(out)) == ["eval", "manifest.json", "schema.json", "train"]
    fresh = str(tmp_path / "fresh")
    with pytest.raises(ShardInputError):
        shard_tfrecords(path, fresh, label="label", keys=["id"])
    assert os.listdir(fresh) == []


def test_a_header_only_file_among_several_adds_no_rows(tmp_path):
    write_csv(tmp_path / "a.csv", ["id", "x", "label"], [[i, i, i % 2] for i in range(10)])
    write_csv(tmp_path / "b.csv", ["id", "x", "label"], [])
    result = shard_tfrecords(str(tmp_path / "*.csv"), str(tmp_path / "ds"), label="label",
                             keys=["id"])
    assert result.total_records == 10 and result.input_files == 2


def test_unlabeled_data_is_sharded_for_prediction_only(tmp_path):
    from tfkfp.components.common.data.schema import SchemaError

    path = write_csv(tmp_path / "u.csv", ["id", "x"], [[i, i * 2.0] for i in range(30)])
    out = str(tmp_path / "ds")
    result = shard_tfrecords(path, out, keys=["id"])
    assert result.schema.label is None and result.total_records == 30
    assert sorted(np.concatenate([read_split(out, s)["id"] for s in ("train", "eval")])) == (
        list(range(30)))
    with pytest.raises(SchemaError, match="no label column, so it can only be read with "
                       "mode='predict'"):
        make_dataset(out, mode="train")


def test_remote_uris_go_through_gfile(tmp_path):
    """TF's in-memory ram:// filesystem stands in for gs:// (same tf.io.gfile code path), for
    a first run and a rerun in place."""
    import tensorflow as tf

    source = f"ram://{tmp_path.name}/in/t.csv"
    with tf.io.gfile.GFile(source, "w") as f:
        f.write("id,x,label\n" + "".join(f"{i},{i * 0.5},{i % 2}\n" for i in range(100)))
    out = f"ram://{tmp_path.name}/out/ds"
    result = shard_tfrecords(source, out, label="label", keys=["id"])
    assert sorted(tf.io.gfile.listdir(out)) == ["eval", "manifest.json", "schema.json",
                                                "train"]
    ids = np.concatenate([read_split(out, s)["id"] for s in ("train", "eval")])
    assert sorted(ids.tolist()) == list(range(100)) and result.total_records == 100
    again = shard_tfrecords(source, out, label="label", keys=["id"],
                            num_shards=3)  # in place: new names, the old shards removed after
    assert sorted(tf.io.gfile.listdir(out + "/train")) == [
        f"data-{k:05d}-of-00003-g1.tfrecord" for k in range(3)]
    assert [s.file for s in again.shards["eval"]] == [
        f"eval/data-{k:05d}-of-00003-g1.tfrecord" for k in range(3)]
    assert not [n for n in tf.io.gfile.listdir(out) if n.startswith(".tfkfp-")]
    ids = np.concatenate([read_split(out, s)["id"] for s in ("train", "eval")])
    assert sorted(ids.tolist()) == list(range(100))
