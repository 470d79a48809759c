"""The suite on an S3-compatible store (SeaweedFS on loopback, credentials and endpoint in the
environment as a pod has them): sharding from and to s3://, reading the shards back through
the bounded fetch cache, predicting with a model kept there. Every answer equals the same
work on local files."""

import json
import os

import numpy as np
import pytest

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.platform import fetch_cache, uris
from tfkfp.components.shard_tfrecords.core import shard_tfrecords


def upload(local: str, uri: str) -> str:
    if os.path.isdir(local):
        uris.copy_tree(local, uri)
    else:
        uris.link_or_copy(local, uri)
    return uri


def rows_of(dataset: str, split: str = "train"):
    """(ids, features) of a Dataset split, read in file order."""
    ids, xs = [], []
    for features, keys in make_dataset(dataset, mode="predict", split=split, batch_size=97,
                                       shuffle=False):
        ids.append(keys["id"].numpy())
        xs.append(np.stack([features[k].numpy() for k in sorted(features)], axis=1))
    return np.concatenate(ids), np.concatenate(xs)


@pytest.mark.parametrize("layout", ["packed", "blocks"])
def test_a_table_on_s3_shards_to_s3_as_it_does_locally(s3, table_csv, tmp_path, layout):
    path, _ = table_csv
    source = upload(path, uris.join(s3, "in", "table.csv"))
    remote = shard_tfrecords(source, uris.join(s3, "ds"), label="animal", keys=["id"],
                             num_shards=3, layout=layout, block_rows=64)
    local = shard_tfrecords(path, str(tmp_path / "ds"), label="animal", keys=["id"],
                            num_shards=3, layout=layout, block_rows=64)
    assert remote.records == local.records
    manifest = Manifest.load(uris.join(s3, "ds"))
    assert manifest.listed() == Manifest.load(str(tmp_path / "ds")).listed()
    assert not [n for n in uris.listdir(uris.join(s3, "ds")) if n.startswith(".")]
    for split in ("train", "eval"):
        remote_ids, remote_x = rows_of(uris.join(s3, "ds"), split)
        local_ids, local_x = rows_of(str(tmp_path / "ds"), split)
        np.testing.assert_array_equal(remote_ids, local_ids)
        np.testing.assert_array_equal(remote_x, local_x)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_every_text_and_columnar_format_reads_from_s3(s3, table_csv, tmp_path, fmt):
    import pyarrow.csv as pcsv

    path, _ = table_csv
    table = pcsv.read_csv(path)
    local = str(tmp_path / f"table.{fmt}")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, local)
    else:
        with open(local, "w") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row) + "\n")
    source = upload(local, uris.join(s3, f"table.{fmt}"))
    remote = shard_tfrecords(source, str(tmp_path / "remote"), label="animal", keys=["id"])
    assert remote.records == shard_tfrecords(local, str(tmp_path / "local"), label="animal",
                                             keys=["id"]).records


def test_the_fetch_cache_holds_only_the_files_being_read(s3, demo_dataset):
    dataset = upload(demo_dataset, uris.join(s3, "digits"))
    cache = fetch_cache.shared()
    before = cache.fetched_bytes
    shard_bytes = [uris.size(uris.join(dataset, f)) for f in Manifest.load(dataset).listed()
                   if f.startswith("train/")]
    for _ in make_dataset(dataset, mode="train", batch_size=64, num_parallel_reads=1):
        assert cache.held_bytes() <= 2 * max(shard_bytes)  # the file read, one opened ahead
    assert cache.fetched_bytes - before == sum(shard_bytes)  # each shard fetched once
    assert cache.held_bytes() == 0 and os.listdir(cache.folder) == []


def predictions(folder: str):
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("predictions-"):
            with open(os.path.join(folder, name)) as f:
                rows += [json.loads(line) for line in f]
    return rows


def test_a_model_and_a_dataset_on_s3_predict_as_local_ones(s3, demo_model, demo_dataset,
                                                          tmp_path):
    model = upload(demo_model, uris.join(s3, "model"))
    dataset = upload(demo_dataset, uris.join(s3, "digits"))
    remote = batch_predict(model, dataset, uris.join(s3, "predictions"), top_k=3)
    local = batch_predict(demo_model, demo_dataset, str(tmp_path / "local"), top_k=3)
    assert (remote.inputs, remote.errors) == (local.inputs, 0)
    uris.copy_tree(uris.join(s3, "predictions"), str(tmp_path / "remote"))
    rows = predictions(str(tmp_path / "remote"))
    assert len(rows) == local.inputs and rows == predictions(str(tmp_path / "local"))


def test_a_dataset_with_shards_in_an_s3_data_root_is_two_small_files(s3, table_csv, tmp_path):
    """The artifact a launcher would move is the manifest and the schema; a rerun writes a
    new generation and removes the old shards only after its manifest is in place."""
    path, _ = table_csv
    root = uris.join(s3, "data-root")
    first = shard_tfrecords(path, str(tmp_path / "ds"), label="animal", keys=["id"],
                            num_shards=2, shard_dir=root)
    assert sorted(os.listdir(tmp_path / "ds")) == ["manifest.json", "schema.json"]
    assert sum(f.stat().st_size for f in (tmp_path / "ds").iterdir()) < 16_000
    listed = Manifest.load(str(tmp_path / "ds")).listed()
    assert all(f.startswith(root + "/") for f in listed)
    again = shard_tfrecords(path, str(tmp_path / "ds"), label="animal", keys=["id"],
                            num_shards=2, shard_dir=root)
    assert again.records == first.records
    now = Manifest.load(str(tmp_path / "ds")).listed()
    assert not now & listed and all("-g1." in f for f in now)
    assert sorted(uris.listdir(uris.join(root, "train"))) == sorted(
        f.rsplit("/", 1)[-1] for f in now if "/train/" in f)
    ids, _ = rows_of(str(tmp_path / "ds"))
    assert len(ids) == first.records["train"]


@pytest.mark.parametrize("files_in_budget", [fetch_cache.FILES_PER_READ, 1])
def test_the_fetch_cache_stays_in_its_budget_and_still_reads_every_row(
        s3, table_csv, monkeypatch, files_in_budget):
    """The reader opens as many files at once as the budget holds, and with room for one
    file only reads them one after the other: local disk is bounded by the budget, not by
    the Dataset (here a tenth of it or less)."""
    path, _ = table_csv
    dataset = uris.join(s3, "many")
    shard_tfrecords(path, dataset, label="animal", keys=["id"], num_shards=30)
    manifest = Manifest.load(dataset)
    sizes = manifest.shard_sizes("train")
    cache = fetch_cache.shared()
    budget = files_in_budget * max(sizes) + 1
    monkeypatch.setenv("TFKFP_FETCH_CACHE_MB", str(budget / (1 << 20)))
    monkeypatch.setattr(cache, "peak_bytes", 0)
    for shuffle in (False, True):
        rows = sum(int(label.shape[0]) for _, label in make_dataset(
            dataset, mode="train", batch_size=16, shuffle=shuffle, seed=1))
        assert rows == manifest.records("train")
    assert 0 < cache.peak_bytes <= budget < sum(sizes) / 5
    assert cache.held_bytes() == 0


def test_a_budget_that_is_not_a_number_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("TFKFP_FETCH_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="TFKFP_FETCH_CACHE_MB='lots'"):
        fetch_cache.budget_from_env()


def test_small_shards_read_many_at_once_without_losing_one(s3, table_csv, monkeypatch):
    """Eight files read at once, each opened ahead: none is dropped before it is read."""
    path, _ = table_csv
    dataset = uris.join(s3, "small")
    shard_tfrecords(path, dataset, label="animal", keys=["id"], num_shards=40)
    rows = sum(int(label.shape[0]) for _, label in make_dataset(
        dataset, mode="train", batch_size=16, shuffle=True, seed=3))
    assert rows == Manifest.load(dataset).records("train")
    assert fetch_cache.shared().held_bytes() == 0


@pytest.mark.parametrize("layout, compression", [("packed", "gzip"), ("blocks", "none")])
def test_a_sample_reads_the_first_records_not_the_shards(s3, table_csv, tmp_path, layout,
                                                         compression):
    """Calibration, a model's build and a label sample take a few hundred rows: from a
    store only those records are read, streamed, with TFRecord's checks."""
    path, _ = table_csv
    dataset = uris.join(s3, "sampled")
    shard_tfrecords(path, dataset, label="animal", keys=["id"], num_shards=3, layout=layout,
                    block_rows=16, compression=compression)
    local = str(tmp_path / "local")
    shard_tfrecords(path, local, label="animal", keys=["id"], num_shards=3, layout=layout,
                    block_rows=16, compression=compression)
    cache = fetch_cache.shared()
    before = cache.fetched_bytes

    def first_ids(data, **reading):
        ids = []
        for _, keys in make_dataset(data, mode="predict", split="train", batch_size=10,
                                    shuffle=False, **reading):
            ids += keys["id"].numpy().tolist()
        return ids

    sampled = first_ids(dataset, max_rows=40)
    assert 40 <= len(sampled) < 60  # whole records: a block holds 16 rows
    assert sampled == first_ids(local, num_parallel_reads=1)[:len(sampled)]  # file order
    assert cache.fetched_bytes == before  # no shard fetched whole


def test_a_broken_record_in_a_sampled_shard_is_named(s3, table_csv, tmp_path):
    from tfkfp.components.common.data.record_stream import RecordStreamError, head_records

    path, _ = table_csv
    local = str(tmp_path / "ds")
    shard_tfrecords(path, local, label="animal", keys=["id"], num_shards=1)
    shard = os.path.join(local, sorted(Manifest.load(local).listed())[-1])
    data = bytearray(open(shard, "rb").read())
    data[40] ^= 0xFF  # inside the first record's bytes
    target = uris.join(s3, "broken.tfrecord")
    with uris.open_file(target, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(RecordStreamError, match="broken.tfrecord: record 0 fails its checksum"):
        head_records([target], "", 5)


def test_files_of_a_reader_dropped_before_its_end_go_when_the_next_one_starts(
        s3, table_csv, monkeypatch):
    """A repeating input abandoned when fit returns leaves its open-ahead files fetched;
    the next reader removes those no handle has open any more."""
    import gc

    path, _ = table_csv
    dataset = uris.join(s3, "dropped")
    shard_tfrecords(path, dataset, label="animal", keys=["id"], num_shards=6)
    cache = fetch_cache.shared()
    held = cache.held_bytes()
    iterator = iter(make_dataset(dataset, mode="train", batch_size=8, repeat=True))
    opened = held
    for _ in range(200):  # read on until the pipeline holds a fetched file open (its read-
        next(iterator)    # ahead may sit between two epochs, every file read and released)
        opened = max(opened, cache.held_bytes())
        if opened > held:
            break
    assert opened > held
    del iterator
    gc.collect()
    monkeypatch.setattr(fetch_cache, "ABANDONED_SECONDS", 0.0)
    rows = sum(int(y.shape[0]) for _, y in make_dataset(dataset, mode="eval", batch_size=64))
    assert rows == Manifest.load(dataset).records("eval")
    assert cache.held_bytes() == held


def test_parameter_server_training_on_s3_shards_is_refused_naming_what_works(
        s3, table_csv, tmp_path):
    """parameter_server's workers run the input pipeline in their own processes, where the
    fetch cache (a tf.py_function of the process that built the dataset) cannot run."""
    from tfkfp.components.common.training.config import TrainConfig, TrainConfigError
    from tfkfp.components.common.training.request import check_request

    path, _ = table_csv
    data = str(tmp_path / "ds")
    shard_tfrecords(path, data, label="animal", keys=["id"], num_shards=2,
                    shard_dir=uris.join(s3, "data-root"))
    with pytest.raises(TrainConfigError, match=r"strategy 'parameter_server' .* cannot fetch "
                       r"shards from s3:// \(s3://.*data_root=inside or a gs:// data root"):
        check_request(TrainConfig(dataset=data, model_dir=str(tmp_path / "m"),
                                  strategy="parameter_server"))
    check_request(TrainConfig(dataset=data, model_dir=str(tmp_path / "m"),
                              strategy="multi_worker_mirrored"))
