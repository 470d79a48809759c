"""Scenario: the suite on an S3-compatible store against the same work on local disk.

A SeaweedFS server on loopback (the store of recent KFP distributions; ``tests/s3_server.py``)
holds the benchmark table and a copy of a sharded Dataset. Each contender on ``s3://`` runs
beside its local twin, interleaved, and each figure is the median of ``repeats`` runs:

- ``shard_tfrecords`` from the ``s3://`` CSV against the same CSV on local disk, the output
  local in both (target 0.7x);
- one epoch of the train split through ``make_dataset`` from the ``s3://`` Dataset against
  the same shards on local disk, ``packed`` and ``blocks`` (target 0.7x), and the most the
  fetch cache held on local disk at once against the split's shard bytes; ``packed`` once
  more with the cache's budget at one shard and its read-ahead, as a Dataset far bigger
  than the budget is read;
- ``train`` from the ``s3://`` Dataset against the local one, examples/s as ``train``
  measures them (target 0.8x), and the fetch cache's peak while it ran.

The server shares the machine's cores with the client, so its CPU time during each S3 run
is printed beside the rates and recorded against the run's wall time (the share of one core
it took).
"""

import contextlib
import dataclasses
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, Iterator, List
from unittest import mock

from benchmarks.harness import Record, load_average

READ_BATCH = 1024
TRAIN_BATCH = 256
TRAIN_EPOCHS = 3
READ_SHARDS = 8  # as the reading scenario, so each reader has several files to interleave
SHARD_SHARDS = 4  # as the sharding scenario
SERVER_ANCHOR = "wall ms of the S3 run"
# The S3 server is test tooling, not part of the installed package: it lives in tests/.
TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")


@dataclasses.dataclass(frozen=True)
class Measured:
    """Medians over the runs of one contender."""

    rate: float  # items per second
    wall_seconds: float
    server_cpu_seconds: float  # the S3 server's CPU time during a run


@dataclasses.dataclass(frozen=True)
class Shards:
    """The train split's shard bytes: all of them, and the biggest file's."""

    total: int
    biggest: int


@contextlib.contextmanager
def s3_server(work: str) -> Iterator:
    """A SeaweedFS server on loopback, its endpoint and keys in the environment (as a pod
    has them) until the block ends."""
    if TESTS_DIR not in sys.path:
        sys.path.insert(0, TESTS_DIR)
    from s3_server import S3Server

    data_dir = os.path.join(work, "seaweedfs")
    os.makedirs(data_dir, exist_ok=True)
    server = S3Server(data_dir)
    try:
        with mock.patch.dict(os.environ, server.env()):
            os.environ.pop("AWS_ENDPOINT_URL_S3", None)  # it would win over AWS_ENDPOINT_URL
            yield server
    finally:
        server.stop()


def median_runs(runs: Dict[str, Callable[[], float]], repeats: int, server,
                warm_up: bool = True) -> Dict[str, Measured]:
    """Each callable does the whole job once and returns its rate; the order rotates every
    round, so none always runs on a warm or cold cache. ``warm_up`` runs each once untimed
    first: a median, unlike a best, would keep the first run's imports and tracing."""
    seen: Dict[str, List[tuple]] = {name: [] for name in runs}
    names = list(runs)
    for name in names if warm_up else ():
        runs[name]()
    for round_no in range(repeats):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            cpu, started = server.cpu_seconds(), time.perf_counter()
            rate = runs[name]()
            wall, busy = time.perf_counter() - started, server.cpu_seconds() - cpu
            seen[name].append((rate, wall, busy))
            print(f"  {name}: {rate:,.0f} items/s (S3 server CPU {busy:.2f} s of {wall:.2f} s)",
                  flush=True)
    return {name: Measured(*(statistics.median(column) for column in zip(*values)))
            for name, values in seen.items()}


def timed_rate(job: Callable[[], int]) -> float:
    started = time.perf_counter()
    items = job()
    return items / (time.perf_counter() - started)


def server_record(scenario: str, measured: Measured, load: float) -> Record:
    """The server's CPU time during the S3 run against its wall time: the share of one core
    the server took from the client."""
    return Record(scenario, "server CPU ms", measured.server_cpu_seconds * 1000,
                  SERVER_ANCHOR, measured.wall_seconds * 1000, None, load)


def shard_once(source: str, out_dir: str) -> int:
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    shutil.rmtree(out_dir, ignore_errors=True)
    return shard_tfrecords(source, out_dir, label="label", num_shards=SHARD_SHARDS
                           ).total_records


def sharding(csv_path: str, s3_csv: str, work: str, repeats: int, server) -> List[Record]:
    print("sharding a CSV from s3:// and from local disk (output local)", flush=True)
    load = load_average()
    got = median_runs({
        "shard_tfrecords, local CSV": lambda: timed_rate(
            lambda: shard_once(csv_path, os.path.join(work, "s3-bench-local-out"))),
        "shard_tfrecords, s3:// CSV": lambda: timed_rate(
            lambda: shard_once(s3_csv, os.path.join(work, "s3-bench-remote-out"))),
    }, repeats, server)
    remote = got["shard_tfrecords, s3:// CSV"]
    return [Record("s3 shard_tfrecords", "records/s", remote.rate,
                   "the same CSV on local disk", got["shard_tfrecords, local CSV"].rate, 0.7,
                   load),
            server_record("s3 shard_tfrecords", remote, load)]


def read_epoch(dataset: str) -> int:
    """Rows of one pass over the train split, in file order."""
    from tfkfp.components.common.data.reader import make_dataset

    rows = 0
    for _, labels in make_dataset(dataset, mode="eval", split="train", batch_size=READ_BATCH):
        rows += len(labels)
    return rows


def held_at_most(job: Callable[[], float], peaks: List[int]) -> float:
    """``job()`` on an object-store Dataset, appending to ``peaks`` the most its readers held
    in the fetch cache on local disk at once: the cache's peak over what it held at the
    start (files of earlier readers in this process that were dropped before their end,
    kept until the cache is over its budget), as one step in its own pod would hold."""
    from tfkfp.components.common.platform import fetch_cache

    cache = fetch_cache.shared()
    left = cache.peak_bytes = cache.held_bytes()  # the cache's peak is per process
    result = job()
    peaks.append(cache.peak_bytes - left)
    print(f"    fetch cache: at most {cache.peak_bytes:,} bytes on local disk at once, "
          f"{left:,} of them left by earlier readers", flush=True)
    return result


def read_epoch_in_budget(dataset: str, budget_bytes: int, peaks: List[int]) -> int:
    """``read_epoch`` from the store with the fetch cache's budget (``TFKFP_FETCH_CACHE_MB``) at
    ``budget_bytes``."""
    from tfkfp.components.common.platform import fetch_cache

    megabytes = str(budget_bytes / (1 << 20))
    with mock.patch.dict(os.environ, {fetch_cache.BUDGET_ENV: megabytes}):
        return held_at_most(lambda: read_epoch(dataset), peaks)


def reading(local: Dict[str, str], remote: Dict[str, str], shards: Dict[str, Shards],
            repeats: int, server) -> List[Record]:
    """Each layout from the store and from local disk, and ``packed`` from the store with a
    budget of one shard read and the shards opened ahead of it (``FILES_PER_READ``), as a
    Dataset far bigger than the budget is read."""
    from tfkfp.components.common.platform import fetch_cache

    print("reading one epoch of the train split from s3:// and from local disk", flush=True)
    load = load_average()
    bounded = fetch_cache.FILES_PER_READ * shards["packed"].biggest
    peaks: Dict[str, List[int]] = {layout: [] for layout in (*local, "bounded")}
    runs = {}
    for layout in local:
        runs[f"make_dataset ({layout}), local"] = (
            lambda d=local[layout]: timed_rate(lambda: read_epoch(d)))
        runs[f"make_dataset ({layout}), s3://"] = (
            lambda d=remote[layout], p=peaks[layout]: held_at_most(
                lambda: timed_rate(lambda: read_epoch(d)), p))
    runs[f"make_dataset (packed), s3://, {bounded:,} byte cache"] = lambda: timed_rate(
        lambda: read_epoch_in_budget(remote["packed"], bounded, peaks["bounded"]))
    got = median_runs(runs, repeats, server)
    records = []
    for layout in local:
        scenario, from_store = f"s3 make_dataset {layout}", got[f"make_dataset ({layout}), s3://"]
        records += [
            Record(scenario, "rows/s", from_store.rate, "the same shards on local disk",
                   got[f"make_dataset ({layout}), local"].rate, 0.7, load),
            server_record(scenario, from_store, load),
            Record(f"s3 fetch cache {layout}", "peak bytes held", max(peaks[layout]),
                   "the split's shard bytes", shards[layout].total, None, load)]
    in_budget = got[f"make_dataset (packed), s3://, {bounded:,} byte cache"]
    return records + [
        Record("s3 make_dataset bounded", "rows/s", in_budget.rate,
               "the same shards on local disk", got["make_dataset (packed), local"].rate,
               None, load),
        server_record("s3 make_dataset bounded", in_budget, load),
        Record("s3 fetch cache bounded", "peak bytes held", max(peaks["bounded"]),
               "the split's shard bytes", shards["packed"].total, None, load)]


def train_rate(dataset: str, work: str, epochs: int) -> float:
    """examples/s of ``train`` as it measures them, into a fresh model folder (a used one
    would resume from its checkpoint)."""
    from tfkfp.components.train.core import train

    model_dir = tempfile.mkdtemp(prefix="s3-bench-model-", dir=work)
    try:
        result = train(dataset, model_dir, epochs=epochs, batch_size=TRAIN_BATCH)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    return result.figures["examples_per_second"]


def training(local: str, remote: str, train_bytes: int, work: str, repeats: int, epochs: int,
             server) -> List[Record]:
    print(f"train from s3:// and from local disk ({epochs} epochs, batch {TRAIN_BATCH})",
          flush=True)
    load = load_average()
    peaks: List[int] = []
    # no warm-up: train's examples/s leave out its start and first epoch already
    got = median_runs({"train, local": lambda: train_rate(local, work, epochs),
                       "train, s3://": lambda: held_at_most(
                           lambda: train_rate(remote, work, epochs), peaks)},
                      repeats, server, warm_up=False)
    return [Record("s3 train", "examples/s", got["train, s3://"].rate,
                   "the same Dataset on local disk", got["train, local"].rate, 0.8, load),
            server_record("s3 train", got["train, s3://"], load),
            Record("s3 fetch cache train", "peak bytes held", max(peaks),
                   "the split's shard bytes", train_bytes, None, load)]


def datasets(csv_path: str, work: str, prefix: str):
    """The table sharded locally in each layout and the same Datasets copied to the store:
    ({layout: local}, {layout: s3 uri}, {layout: the train split's Shards})."""
    from tfkfp.components.common.platform import object_store
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    local, remote, shards = {}, {}, {}
    for layout in ("packed", "blocks"):
        local[layout] = os.path.join(work, f"s3-bench-dataset-{layout}")
        result = shard_tfrecords(csv_path, local[layout], label="label",
                                 num_shards=READ_SHARDS, layout=layout)
        remote[layout] = f"{prefix}/dataset-{layout}"
        object_store.copy(local[layout], remote[layout])
        shards[layout] = Shards(result.bytes["train"],
                                max(info.bytes for info in result.shards["train"]))
    return local, remote, shards


def run(csv_path: str, work: str, repeats: int, quick: bool = False) -> List[Record]:
    """Every comparison above on one server; ``quick`` trains 2 epochs instead of 3."""
    from tfkfp.components.common.platform import object_store

    logging.getLogger("tfkfp").setLevel(logging.WARNING)
    with s3_server(work) as server:
        prefix = server.fresh_prefix()
        s3_csv = f"{prefix}/{os.path.basename(csv_path)}"
        object_store.copy(csv_path, s3_csv)
        records = sharding(csv_path, s3_csv, work, repeats, server)
        local, remote, shards = datasets(csv_path, work, prefix)
        records += reading(local, remote, shards, repeats, server)
        records += training(local["packed"], remote["packed"], shards["packed"].total, work,
                            repeats, 2 if quick else TRAIN_EPOCHS, server)
    return records
