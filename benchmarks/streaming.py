"""Scenario: streaming predictions from Pub/Sub on Beam's local streaming runner.
``python -m benchmarks.streaming [--quick | --smoke]`` (also ``python -m benchmarks --only
streaming``).

On the Pub/Sub emulator of the Google Cloud CLI (started here, stopped as a process group),
with the prediction scenario's model (32 float columns, a 32-256-256-10 MLP), the suite's
``stream_predict`` on the BundleBasedDirectRunner:

- sustained messages/s: a backlog published first, the rate between the first and the last
  prediction published (the runner's start left out), with the model in the job and through
  ``tfkfp serve`` (the endpoint option), mini-batched (a pull's rows a request) and one row
  a request;
- end-to-end latency at 20 messages/s: from publishing (an attribute the prediction carries)
  to the prediction's publish time, p50 and p99;
- model loads in the process (goal: one);
- nothing unaccounted: predictions + dead letters + messages left = messages published.

No ratio target: the local runner's own cost per message dominates. The course's streaming
ranking (model in the job, endpoint mini-batched, one request a row) is for Dataflow and is
not claimed from a local run.
"""

import dataclasses
import json
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import data
from benchmarks.harness import Record, load_average, parse_options, print_records

RATE = 20.0  # messages a second for the latency run
# Where the model runs: in the job, or behind ``tfkfp serve`` with this many rows a request
PLACES = {"in job": 0, "endpoint 64/req": 64, "endpoint 1/req": 1}


def _rows(csv_path: str, count: int) -> List[bytes]:
    with open(csv_path) as f:
        header = f.readline().strip().split(",")
        lines = [f.readline() for _ in range(count)]
    return [json.dumps(dict(zip(header, map(float, line.split(","))))).encode()
            for line in lines if line]


def _publish_at(topic: str, bodies: List[bytes], rate: float, ready: threading.Event) -> None:
    """Once the job answers (``ready``), publish at ``rate``, each message stamped."""
    from google.cloud import pubsub_v1

    publisher = pubsub_v1.PublisherClient()
    ready.wait()
    started = time.monotonic()
    for i, body in enumerate(bodies):
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
        publisher.publish(topic, body, sent=repr(time.time()))


def _when_answering(subscription: str, ready: threading.Event, warm: List) -> None:
    """Set ``ready`` once the warm-up message's prediction is out (kept in ``warm``)."""
    from google.cloud import pubsub_v1

    subscriber = pubsub_v1.SubscriberClient()
    while not warm:
        found = subscriber.pull(subscription=subscription, max_messages=1,
                                timeout=30).received_messages
        warm += [m.message for m in found]
        if found:
            subscriber.acknowledge(subscription=subscription, ack_ids=[found[0].ack_id])
        time.sleep(0.2)
    ready.set()


def _run(model: str, names: Dict[str, str], bodies: List[bytes], rate: float = 0.0,
         endpoint=None, batch: int = 64):
    from tests.pubsub_emulator import publish, pull_all
    from tfkfp.components.stream_predict.core import stream_predict
    from tfkfp.components.stream_predict.options import StreamOptions

    publish(names["rows"], bodies[:1])  # a warm-up: paced messages wait for its answer
    warm: List = []
    if rate:
        ready = threading.Event()
        threading.Thread(target=_when_answering, args=(names["out_sub"], ready, warm),
                         daemon=True).start()
        threading.Thread(target=_publish_at, args=(names["rows"], bodies[1:], rate, ready),
                         daemon=True).start()
    else:
        publish(names["rows"], bodies[1:])
    options = StreamOptions(names["rows_sub"], names["out"], names["dead"],
                             max_batch_size=batch, max_messages=len(bodies), drain_s=60,
                             duration_s=len(bodies) / max(rate, 1) + 120)
    result = stream_predict(model, options, "direct", endpoint=endpoint)
    answers = warm + pull_all(names["out_sub"], expected=result.predicted - len(warm))
    letters = pull_all(names["dead_sub"], timeout=5)
    left = pull_all(names["rows_sub"], timeout=5)
    return result, answers, letters, left


def run(csv_path: str, work: str, quick: bool, smoke: bool = False) -> List[Record]:
    from benchmarks.prediction import build_model
    from tests.pubsub_emulator import Emulator
    from tests.serve_process import running
    from tfkfp.components.common.endpoint.options import EndpointOptions
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    dataset, model = os.path.join(work, "st-dataset"), os.path.join(work, "st-model")
    shard_tfrecords(csv_path, dataset, label="label", num_shards=2)
    build_model(dataset, model)
    emulator = Emulator(work)
    os.environ["PUBSUB_EMULATOR_HOST"] = emulator.host
    load = load_average()
    backlog = 40 if smoke else 200 if quick else 1000
    try:
        records = [_scenario("backlog", model, _rows(csv_path, backlog), 0.0, load)]
        with running(model, tmp_path=pathlib.Path(work)) as server:
            url = f"http://127.0.0.1:{server.port}"
            for place, batch in list(PLACES.items())[1:]:
                endpoint = EndpointOptions(url, batch_rows=batch)
                records.append(_scenario("backlog", model, _rows(csv_path, backlog // 2),
                                         0.0, load, place, endpoint, batch))
        records[1:] = [dataclasses.replace(r, anchor="the model in the job's rate",
                                           anchor_value=records[0].ours)
                       for r in records[1:]]
        paced = _rows(csv_path, int(RATE * (2 if smoke else 5 if quick else 30)))
        records += _scenario("paced", model, paced, RATE, load)
        return records
    finally:
        emulator.stop()


PLACES_FIRST = next(iter(PLACES))


def _scenario(name: str, model: str, bodies: List[bytes], rate: float, load: float,
              place: str = PLACES_FIRST, endpoint=None, batch: int = 64):
    """One stream over fresh topics; its figures (the backlog's rate, or the paced run's
    latencies)."""
    from tests.pubsub_emulator import topic_with_subscription
    from tfkfp.components.common.beam.handler import loads_in_process

    names = {}
    for part in ("rows", "out", "dead"):
        topic, sub = topic_with_subscription(f"bench-{name}-{PLACES[place]}-{part}")
        names[part], names[f"{part}_sub"] = topic, sub
    before = loads_in_process()
    result, answers, letters, left = _run(model, names, bodies, rate, endpoint, batch)
    loads = loads_in_process() - before
    unaccounted = len(bodies) - len(answers) - len(letters) - len(left)
    print(f"  {name}, {place}: {len(bodies)} published, {len(answers)} predicted, "
          f"{len(letters)} dead letters, {len(left)} left, {unaccounted} unaccounted; "
          f"model loads in this process {loads}", flush=True)
    if name == "backlog":
        return _rate(place, answers, load)
    return _latencies(answers, load)


def _rate(place: str, answers, load: float) -> Record:
    published = sorted(m.publish_time.timestamp() for m in answers)
    rate = (len(published) - 1) / max(published[-1] - published[0], 1e-9)
    print(f"  sustained, {place}: {rate:,.1f} messages/s", flush=True)
    return Record(f"stream, {place}", "messages/s", rate,
                  f"the paced run's {RATE:g} messages/s", RATE, None, load)


def _latencies(answers, load: float) -> List[Record]:
    latencies = sorted(m.publish_time.timestamp() - float(m.attributes["sent"])
                       for m in answers if "sent" in m.attributes)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    print(f"  latency at {RATE:g} messages/s: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms",
          flush=True)
    interval_ms = 1000 / RATE
    return [Record(f"stream, {RATE:g}/s paced", "p50 latency ms", p50 * 1000,
                   "the publish interval (ms)", interval_ms, None, load),
            Record(f"stream, {RATE:g}/s paced", "p99 latency ms", p99 * 1000,
                   "the publish interval (ms)", interval_ms, None, load)]


def main(argv=None) -> int:
    args = parse_options("python -m benchmarks.streaming", argv, "fewer messages")
    with tempfile.TemporaryDirectory(prefix="tfkfp-bench-") as work:
        records = run(data.write_table(work, 5000), work, args.quick, args.smoke)
    print_records(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
