import numpy as np
import pytest
import tensorflow as tf

from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.shard_tfrecords.core import shard_tfrecords


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from conftest import write_csv

    tmp = tmp_path_factory.mktemp("reader")
    rows = [[i, i * 0.25, f"k{i}", "yes" if i % 3 else "no"] for i in range(400)]
    path = write_csv(tmp / "t.csv", ["id", "x", "name", "answer"], rows)
    out = str(tmp / "ds")
    shard_tfrecords(path, out, label="answer", keys=["id", "name"], num_shards=4)
    return out


def ids(ds):
    return np.concatenate([keys["id"].numpy() for _, keys in ds])


def test_train_mode_yields_features_and_label_indices(dataset):
    features, label = next(iter(make_dataset(dataset, batch_size=32, seed=1)))
    assert set(features) == {"x"}  # keys and label are not model inputs
    assert features["x"].dtype == tf.float32 and features["x"].shape == (32,)
    np.testing.assert_array_equal(label.numpy(), (features["x"].numpy() * 4 % 3 != 0) * 1)


def test_predict_mode_carries_the_keys(dataset):
    features, keys = next(iter(make_dataset(dataset, mode="predict", batch_size=8)))
    assert set(keys) == {"id", "name"}
    np.testing.assert_array_equal(features["x"].numpy(), keys["id"].numpy() * 0.25)
    assert [n.decode() for n in keys["name"].numpy()] == [f"k{i}" for i in keys["id"].numpy()]


def test_deterministic_order_is_repeatable_and_shuffle_changes_it(dataset):
    plain = ids(make_dataset(dataset, mode="predict", split="train", batch_size=50))
    again = ids(make_dataset(dataset, mode="predict", split="train", batch_size=50))
    np.testing.assert_array_equal(plain, again)
    shuffled = ids(make_dataset(dataset, mode="predict", split="train", batch_size=50,
                                shuffle=True, seed=3))
    assert sorted(shuffled) == sorted(plain) and list(shuffled) != list(plain)


def test_repeat_and_cache(dataset, tmp_path):
    ds = make_dataset(dataset, batch_size=64, repeat=True, cache="memory", seed=0,
                      drop_remainder=True)
    batches = list(ds.take(20))
    assert all(f["x"].shape == (64,) for f, _ in batches)
    file_cache = str(tmp_path / "cache")
    first = ids(make_dataset(dataset, mode="predict", cache=file_cache))
    np.testing.assert_array_equal(first, ids(make_dataset(dataset, mode="predict",
                                                          cache=file_cache)))


def test_input_context_reads_a_disjoint_share_with_per_replica_batches(dataset):
    shares = []
    for pipeline in range(2):
        ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                         num_replicas_in_sync=2)
        ds = make_dataset(dataset, mode="predict", split="train", batch_size=64,
                          input_context=ctx)
        shares.append(ids(ds))
        assert next(iter(ds))[0]["x"].shape[0] == 32
    assert not set(shares[0]) & set(shares[1])
    everything = ids(make_dataset(dataset, mode="predict", split="train"))
    assert sorted(np.concatenate(shares)) == sorted(everything)


def test_file_pattern_with_an_explicit_schema(dataset):
    from tfkfp.components.common.data.schema import Schema

    ds = make_dataset(dataset + "/eval/data-*", schema=Schema.load(dataset), mode="eval")
    assert sum(len(label) for _, label in ds) > 0


def test_bad_arguments_name_what_was_wrong(dataset, tmp_path):
    with pytest.raises(ValueError, match="mode 'serve' is not one of"):
        make_dataset(dataset, mode="serve")
    with pytest.raises(SchemaError, match="has no split 'test'"):
        make_dataset(dataset, split="test")
    with pytest.raises(SchemaError, match="no schema at"):
        make_dataset(str(tmp_path))
    with pytest.raises(ValueError, match="auto_shard_policy 'rows'"):
        make_dataset(dataset, auto_shard_policy="rows")


@pytest.mark.parametrize("layout", ["packed", "columns"])
def test_shuffled_rows_mix_many_groups_of_consecutive_records(tmp_path, layout):
    """One-row records move through the shuffle in groups of consecutive records (for
    speed); a shuffled batch still draws on many groups, every row comes once per epoch, and
    each epoch is shuffled anew."""
    from conftest import write_csv
    from tfkfp.components.common.data.reader import GROUP_RECORDS

    rows = [[i, i * 0.5, "yes" if i % 2 else "no"] for i in range(3000)]
    out = str(tmp_path / "ds")
    shard_tfrecords(write_csv(tmp_path / "t.csv", ["id", "x", "answer"], rows), out,
                    label="answer", keys=["id"], num_shards=1, layout=layout)
    in_file_order = ids(make_dataset(out, mode="predict", split="train", batch_size=256))
    group_of = {key: position // GROUP_RECORDS for position, key in enumerate(in_file_order)}
    shuffled = make_dataset(out, mode="predict", split="train", batch_size=64, shuffle=True)
    batches = [keys["id"].numpy() for _, keys in shuffled]
    assert sorted(np.concatenate(batches).tolist()) == sorted(in_file_order.tolist())
    groups_per_batch = [len({group_of[key] for key in batch}) for batch in batches[:-1]]
    # intact groups would put a batch of 64 rows in 1 or 2 of them; mixed, about 25
    assert np.mean(groups_per_batch) > 12, groups_per_batch
    again = ids(shuffled)  # a second epoch
    assert sorted(again.tolist()) == sorted(in_file_order.tolist())
    assert not np.array_equal(np.concatenate(batches), again)
