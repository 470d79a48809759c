"""Scenario: predictions inside a Beam job. ``python -m benchmarks.beam [--quick | --smoke]
[--rows N] [--repeats N]`` (also ``python -m benchmarks --only beam``).

The prediction scenario's table and model (32 float columns, a 32-256-256-10 MLP, TFRecord
shards), rows read from files in every contender, on Beam's FnApiRunner here:

- ``batch_predict`` with ``beam_runner=direct``: the suite's RunInference handler, the step's
  readers and writers, the job's start included;
- the anchor: the SavedModel's serving signature called in memory on the same rows, model
  load and parse included (one process, no Beam);
- Beam's stock ``TFModelHandlerNumpy`` where it loads (it needs tensorflow_hub and a
  Keras-saved model): reported, no target;
- the course's batch ranking on the same runner and rows: the model in the job against
  ``tfkfp serve`` on loopback called from the job's RunInference, mini-batched (256 rows a
  request) and one row per request (on a sample; its rate extrapolates). The endpoint client
  here is written from the Open Inference Protocol's REST spec, not the suite's own.

Each figure is the median of ``--repeats`` runs, contenders rotated each round. Targets
(issue 47): Beam >= 0.5x the anchor; the model in the job >= 1.5x the endpoint mini-batched
and >= 10x one row per request. The managed path (Vertex AI batch prediction) is described
in docs/how-to/beam.md, not run.
"""

import http.client
import json
import logging
import os
import sys
import tempfile
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.endpoint import median_rates
from benchmarks.harness import Record, load_average, table_main

SINGLE_SAMPLE = 1000  # rows sent one per request
MINI_BATCH = 256  # rows per request, mini-batched


def in_memory_signature(model_dir: str, dataset_dir: str) -> int:
    """The anchor: load the SavedModel, parse the shards, call the signature in batches."""
    import tensorflow as tf

    from tfkfp.components.common.data.reader import make_dataset

    fn = tf.saved_model.load(model_dir).signatures["serving_raw"]
    rows = 0
    for features, _ in make_dataset(dataset_dir, batch_size=4096, shuffle=False):
        fn(**features)["probabilities"].numpy()
        rows += int(next(iter(features.values())).shape[0])
    return rows


def _v2_body(rows: List[Dict[str, float]]) -> bytes:
    """An Open Inference Protocol request: one FP32 tensor a column, shape [rows]."""
    return json.dumps({"inputs": [
        {"name": name, "datatype": "FP32", "shape": [len(rows)],
         "data": [row[name] for row in rows]} for name in rows[0]]}).encode()


def endpoint_handler(port: int, batch_rows: int):
    """A Beam RunInference handler that sends each batch to tfkfp serve (OIP v2)."""
    from apache_beam.ml.inference.base import ModelHandler, PredictionResult

    class OipHandler(ModelHandler):
        def __init__(self):
            super().__init__(min_batch_size=batch_rows, max_batch_size=batch_rows)

        def load_model(self):
            return http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def run_inference(self, batch, model, inference_args=None):
            model.request("POST", "/v2/models/model/infer", _v2_body(list(batch)),
                          {"content-type": "application/json"})
            answer = json.loads(model.getresponse().read())
            classes = next(o["data"] for o in answer["outputs"] if o["name"] == "class")
            return [PredictionResult(row, c) for row, c in zip(batch, classes)]

    return OipHandler()


def beam_rows(dataset_dir: str, handler, limit: int = 0) -> int:
    """Rows read from the shards in a Beam job, each predicted through ``handler``."""
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfkfp.components.common.data.reader import make_dataset

    def rows_of(_):
        done = 0
        for features, _label in make_dataset(dataset_dir, batch_size=1024, shuffle=False):
            columns = {n: v.numpy().tolist() for n, v in features.items()}
            for i in range(len(next(iter(columns.values())))):
                if limit and done >= limit:
                    return
                done += 1
                yield {n: values[i] for n, values in columns.items()}

    with tempfile.TemporaryDirectory() as out:
        with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
            _ = (p | beam.Create([0]) | beam.FlatMap(rows_of) | RunInference(handler)
                 | beam.combiners.Count.Globally() | beam.Map(str)
                 | beam.io.WriteToText(os.path.join(out, "count")))
        with open(os.path.join(out, "count-00000-of-00001")) as f:
            return int(f.read())


def stock_handler(model_dir: str):
    """Beam's TFModelHandlerNumpy where it loads here, else None and why."""
    try:
        from apache_beam.ml.inference.tensorflow_inference import TFModelHandlerNumpy
    except ImportError as err:  # it imports tensorflow_hub
        return None, f"not importable: {err}"
    return TFModelHandlerNumpy(model_dir), ""


def run(csv_path: str, work: str, repeats: int, smoke: bool = False) -> List[Record]:
    """The records above; ``smoke``: one row per request on a few rows only."""
    from benchmarks.prediction import build_model
    from benchmarks.serving import free_port, served
    from tfkfp.components.batch_predict.core import batch_predict
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    logging.getLogger("tfkfp").setLevel(logging.ERROR)
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    dataset_dir, model_dir = os.path.join(work, "bm-dataset"), os.path.join(work, "bm-model")
    shard_tfrecords(csv_path, dataset_dir, label="label", num_shards=4)
    build_model(dataset_dir, model_dir)
    port = free_port()

    def in_beam() -> int:
        return batch_predict(model_dir, dataset_dir, os.path.join(work, "bm-out"),
                             beam_runner="direct").inputs

    runs = {"in-memory signature": lambda: in_memory_signature(model_dir, dataset_dir),
            "batch_predict on Beam": in_beam,
            f"Beam -> endpoint {MINI_BATCH} rows a request":
                lambda: beam_rows(dataset_dir, endpoint_handler(port, MINI_BATCH)),
            "Beam -> endpoint 1 row a request":
                lambda: beam_rows(dataset_dir, endpoint_handler(port, 1),
                                  SINGLE_SAMPLE // 20 if smoke else SINGLE_SAMPLE)}
    stock, why = stock_handler(model_dir)
    if stock is not None:
        runs["Beam's TFModelHandlerNumpy"] = lambda: beam_rows(dataset_dir, stock)
    else:
        print(f"  Beam's TFModelHandlerNumpy: {why}", flush=True)
    with served(model_dir, port):
        print("predictions in a Beam job (FnApiRunner), rows read from files", flush=True)
        load = load_average()
        rates = median_rates(runs, repeats)
    ours, anchor = rates["batch_predict on Beam"], rates["in-memory signature"]
    batched = rates[f"Beam -> endpoint {MINI_BATCH} rows a request"]
    single = rates["Beam -> endpoint 1 row a request"]
    records = [Record("beam", "rows/s", ours, "in-memory signature", anchor, 0.5, load),
               Record("beam", "rows/s", ours, f"endpoint {MINI_BATCH} rows a request",
                      batched, 1.5, load),
               Record("beam", "rows/s", ours, "endpoint 1 row a request", single, 10.0,
                      load)]
    if "Beam's TFModelHandlerNumpy" in rates:
        records.append(Record("beam", "rows/s", ours, "Beam's TFModelHandlerNumpy",
                              rates["Beam's TFModelHandlerNumpy"], None, load))
    return records


def main(argv=None) -> int:
    return table_main("python -m benchmarks.beam", argv, 50_000, "median", run)


if __name__ == "__main__":
    sys.exit(main())
