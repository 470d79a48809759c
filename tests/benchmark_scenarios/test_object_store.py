"""The object_store benchmark scenario on a tiny table: every comparison it promises comes
back as a record against a same-run anchor (the figures themselves are not judged)."""

import math

import pytest

from benchmarks import data, object_store
from benchmarks.harness import Record

RATES = {  # scenario -> (metric, anchor, target)
    "s3 shard_tfrecords": ("records/s", "the same CSV on local disk", 0.7),
    "s3 make_dataset packed": ("rows/s", "the same shards on local disk", 0.7),
    "s3 make_dataset blocks": ("rows/s", "the same shards on local disk", 0.7),
    "s3 make_dataset bounded": ("rows/s", "the same shards on local disk", None),
    "s3 train": ("examples/s", "the same Dataset on local disk", 0.8),
}
CACHES = ["s3 fetch cache packed", "s3 fetch cache blocks", "s3 fetch cache bounded",
          "s3 fetch cache train"]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("bench"))
    return object_store.run(data.write_table(work, 3000), work, repeats=1, quick=True)


def by_key(records):
    found = {}
    for record in records:
        assert (record.scenario, record.metric) not in found, record
        found[(record.scenario, record.metric)] = record
    return found


@pytest.mark.slow
def test_each_s3_contender_has_its_rate_and_the_servers_cpu_beside_its_local_twin(records):
    found = by_key(records)
    assert all(isinstance(r, Record) and r.load_avg >= 0 for r in records)
    for scenario, (metric, anchor, target) in RATES.items():
        rate = found[(scenario, metric)]
        assert (rate.anchor, rate.target) == (anchor, target)
        assert rate.ours > 0 and rate.anchor_value > 0 and math.isfinite(rate.ratio)
        server = found[(scenario, "server CPU ms")]
        assert server.anchor == object_store.SERVER_ANCHOR and server.target is None
        assert server.ours >= 0 and server.anchor_value > 0
    assert set(found) == {*((s, m) for s, (m, _, _) in RATES.items()),
                          *((s, "server CPU ms") for s in RATES),
                          *((c, "peak bytes held") for c in CACHES)}


@pytest.mark.slow
def test_the_fetch_cache_peak_is_reported_against_the_splits_shard_bytes(records):
    found = by_key(records)
    peaks = {name: found[(name, "peak bytes held")] for name in CACHES}
    assert all(p.anchor == "the split's shard bytes" and p.target is None
               for p in peaks.values())
    assert all(p.ours > 0 for p in peaks.values())
    # a budget of one shard and its read-ahead holds less than the whole split
    bounded = peaks["s3 fetch cache bounded"]
    assert bounded.ours < bounded.anchor_value
    assert bounded.anchor_value == peaks["s3 fetch cache packed"].anchor_value
