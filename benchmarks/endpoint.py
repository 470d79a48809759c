"""Scenario: the three ways to add predictions to a batch job, measured here.
``python -m benchmarks.endpoint [--quick | --smoke] [--rows N] [--repeats N]``.

On the same table and model (the prediction scenario's 32-256-256-10 MLP over 32 float
columns, TFRecord shards), in one run:

- ``batch_predict`` loading the SavedModel in the step: the anchor;
- ``batch_predict`` sending its rows to ``tfkfp serve`` on loopback (endpoint mode), Open
  Inference Protocol v2 at several mini-batch sizes and concurrencies, and KServe v1 at one;
- one row per request (endpoint_batch_rows 1), on a sample of the rows (its rate
  extrapolates);
- the managed path (``vertex_batch_predict``, a Vertex AI BatchPredictionJob) is described
  in docs/benchmarks.md, not run: it needs a Google Cloud project.

The server shares the machine's cores with the client, as a sidecar or a node-local server
would. Each figure is the median of ``--repeats`` runs, the contenders in a rotated order each
round. Targets (issue 38): mini-batched endpoint >= 0.35x the in-step rows/s, and >= 10x one
row per request. The client's own JSON work per row (encoding the rows, reading the answers)
is timed apart, so the rest of the endpoint's cost per row (the server's decoding, HTTP,
batching) can be read off the table.
"""

import logging
import os
import statistics
import sys
import time
from typing import Callable, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.harness import Record, load_average, table_main

MINI_BATCHES = ((64, 4), (256, 1), (256, 4), (1024, 4))  # (rows per request, in flight)
SINGLE_SAMPLE = 2000  # rows predicted one per request


def median_rates(runs: Dict[str, Callable[[], int]], repeats: int) -> Dict[str, float]:
    """Rows per second of each contender: the median of ``repeats`` runs, the order rotating
    every round so that none always runs first."""
    rates: Dict[str, List[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_no in range(repeats):
        for name in names[round_no % len(names):] + names[:round_no % len(names)]:
            started = time.perf_counter()
            rows = runs[name]()
            rates[name].append(rows / (time.perf_counter() - started))
            print(f"  {name}: {rates[name][-1]:,.0f} rows/s", flush=True)
    return {name: statistics.median(values) for name, values in rates.items()}


def client_json_seconds_per_row(dataset_dir: str, rows: int) -> float:
    """The client's JSON work per row at 256 rows a request (v2): encoding the rows and
    reading back an answer of class, class_id and score."""
    import json

    import numpy as np

    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.endpoint.protocols import V2

    features, _ = next(iter(make_dataset(dataset_dir, batch_size=256, shuffle=False)))
    batch = {n: v.numpy() for n, v in features.items()}
    count = len(next(iter(batch.values())))
    answer = json.dumps({"outputs": [
        {"name": "class", "datatype": "BYTES", "shape": [count], "data": ["3"] * count},
        {"name": "class_id", "datatype": "INT64", "shape": [count], "data": [3] * count},
        {"name": "score", "datatype": "FP32", "shape": [count],
         "data": np.random.default_rng(0).random(count).tolist()}]})
    repeats = max(1, rows // count)
    started = time.perf_counter()
    for _ in range(repeats):
        V2.encode(batch)
        V2.decode(json.loads(answer), count)
    return (time.perf_counter() - started) / (repeats * count)


def run(csv_path: str, work: str, repeats: int, smoke: bool = False) -> List[Record]:
    """The records above; ``smoke``: one row per request on a few rows only."""
    from benchmarks.prediction import build_model
    from benchmarks.serving import free_port, served
    from tfkfp.components.batch_predict.core import batch_predict
    from tfkfp.components.batch_predict.options import EndpointOptions
    from tfkfp.components.common.model.predictor import load_predictor
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    logging.getLogger("tfkfp").setLevel(logging.ERROR)
    dataset_dir, model_dir = os.path.join(work, "ep-dataset"), os.path.join(work, "ep-model")
    sample_dir = os.path.join(work, "ep-sample")
    shard_tfrecords(csv_path, dataset_dir, label="label", num_shards=4)
    sample_csv = os.path.join(work, "ep-sample.csv")
    sample = SINGLE_SAMPLE // 20 if smoke else SINGLE_SAMPLE
    with open(csv_path) as src, open(sample_csv, "w") as out:
        out.writelines(line for _, line in zip(range(sample + 1), src))
    shard_tfrecords(sample_csv, sample_dir, label="label", num_shards=1)
    build_model(dataset_dir, model_dir)
    saved = load_predictor(model_dir)
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def in_step() -> int:
        return batch_predict(model_dir, dataset_dir, os.path.join(work, "ep-step"),
                             predictor=saved).inputs

    def endpoint(rows: int, concurrency: int, protocol: str = "v2",
                 data_dir: str = dataset_dir) -> Callable[[], int]:
        options = EndpointOptions(url, protocol=protocol, batch_rows=rows,
                                  concurrency=concurrency)
        return lambda: batch_predict(model_dir, data_dir, os.path.join(work, "ep-remote"),
                                     endpoint=options).inputs

    # "endpoint PROTOCOL ROWSxIN_FLIGHT": rows per request, requests in flight
    runs = {"in-step batch_predict": in_step}
    runs.update({f"endpoint v2 {rows}x{n}": endpoint(rows, n) for rows, n in MINI_BATCHES})
    runs["endpoint v1 256x4"] = endpoint(256, 4, "v1")
    runs["endpoint v2 1x4"] = endpoint(1, 4, data_dir=sample_dir)
    with served(model_dir, port):
        print("batch prediction: in the step, and through tfkfp serve on loopback", flush=True)
        load = load_average()
        rates = median_rates(runs, repeats)
    anchor = rates["in-step batch_predict"]
    best = max((name for name in rates if name.startswith("endpoint") and
                not name.endswith(" 1x4")), key=rates.__getitem__)
    client = client_json_seconds_per_row(dataset_dir, 1000 if smoke else 20_000)
    print(f"  wall time per row: in the step {1e6 / anchor:.1f} us, through the endpoint "
          f"({best}) {1e6 / rates[best]:.1f} us, one row per request "
          f"{1e6 / rates['endpoint v2 1x4']:.0f} us; the client's JSON alone (encode rows, "
          f"read answers, v2 at 256 rows) {1e6 * client:.1f} us of CPU per row", flush=True)
    records = [Record(name, "rows/s", rate, "in-step batch_predict", anchor,
                      0.35 if name == best else None, load)
               for name, rate in rates.items() if name.startswith("endpoint")]
    single = rates["endpoint v2 1x4"]
    records.append(Record(best, "rows/s", rates[best],
                          "one row per request", single, 10.0, load))
    return records


def main(argv=None) -> int:
    return table_main("python -m benchmarks.endpoint", argv, 100_000, "median", run)


if __name__ == "__main__":
    sys.exit(main())
