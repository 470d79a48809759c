"""The step's own prediction loop: this task's input files, one after another, read, predicted
and written in three overlapping stages (Task), each file into its predictions and errors
shard (_Shard), by the model loaded here or through an endpoint's sender.
"""

import concurrent.futures
from typing import Dict, List

import numpy as np

from tfkfp.components.batch_predict import evaluation, sources, writers
from tfkfp.components.batch_predict.errors import model_errors
from tfkfp.components.batch_predict.records import Chunk, ErrorRow, prefetch
from tfkfp.components.batch_predict.result import ShardCounts
from tfkfp.components.batch_predict.stages import StageClock
from tfkfp.components.batch_predict.tfrecords import missing_records
from tfkfp.components.common.data import predictions_files
from tfkfp.components.common.model.predictor import Predictor
from tfkfp.components.common.model.ranking import check_outputs, top_k_of
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.halving import split_failures
from tfkfp.components.common.platform.progress import Progress


class Task:
    """Predicts this task's input files, one after another, into their output shards.

    One stream of chunks runs through all files, so reading the next file overlaps
    predicting and writing the last one; ``None`` after a file's chunks ends its shard.
    """

    def __init__(self, predictor: Predictor, key_columns, top_k: int, fmt: str,
                 output_dir: str, progress: Progress, sender=None):
        self.predictor, self.key_columns, self.top_k = predictor, key_columns, top_k
        self.fmt, self.output_dir, self.progress = fmt, output_dir, progress
        self.sender = sender  # endpoint.Sender: the rows go to an endpoint instead
        self.clock = StageClock()
        self.evaluation = evaluation.Evaluation(key_columns, predictor.labels,
                                                predictor.regressor)

    def run(self, plan: sources.InputPlan, chosen: List[int], read) -> List[ShardCounts]:
        clock = self.clock

        def stream():
            for position, chunk in clock.timed_iter("read", read([plan.files[i] for i in chosen])):
                yield chosen[position], chunk

        shards: Dict[int, _Shard] = {}
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pending: List[concurrent.futures.Future] = []
                for index, chunk in clock.timed_iter("wait_input",
                                                     prefetch(stream(), ahead=3)):
                    if index not in shards:
                        shards[index] = _Shard(plan, index, self.fmt, self.output_dir)
                    shard = shards[index]
                    if chunk is None:
                        pending.append(pool.submit(shard.finish, self.empty()))
                    else:
                        with clock.timing("predict"):
                            preds, failed = self.predict(chunk, shard.path)
                        shard.add(chunk, failed, preds.rows)
                        pending.append(pool.submit(clock.timed("write", shard.out.write),
                                                   preds))
                        self.progress.update(chunk.inputs)
                    while len(pending) > 2:
                        with clock.timing("wait_writer"):
                            pending.pop(0).result()
                for future in pending:
                    future.result()
        except BaseException:
            for shard in shards.values():
                shard.out.abort()
            raise
        return [shards[i].counts() for i in chosen]

    def predict(self, chunk: Chunk, path: str):
        """Top-k predictions (a regressor's values) for the chunk's rows; rows the model
        fails on become errors."""
        if self.sender is not None:
            return self.sender.predict(chunk, path)
        def attempt(lo: int, hi: int):
            return self.predictor.predict({n: v[lo:hi] for n, v in chunk.features.items()})

        good, bad = split_failures(attempt, chunk.rows)
        errors = [ErrorRow(path, int(chunk.records[i]), -1, f"prediction failed: {err}")
                  for i, err in bad]
        keep = np.setdiff1d(np.arange(chunk.rows), [i for i, _ in bad]) if bad else None
        keys = chunk.keys if keep is None else {n: v[keep] for n, v in chunk.keys.items()}
        if not good:
            return self.empty(), errors
        outputs = np.concatenate([np.asarray(p) for _, _, p in good]) if len(good) > 1 \
            else np.asarray(good[0][2])
        keys = {c.name: keys[c.name] for c in self.key_columns}
        return self.predictions(keys, outputs), errors

    def predictions(self, keys: Dict[str, np.ndarray], outputs: np.ndarray
                    ) -> writers.Predictions:
        with model_errors():
            check_outputs(self.predictor, outputs)
        self.evaluation.add(keys, outputs)
        if self.predictor.regressor:
            return writers.Predictions(keys, self.key_columns, values=outputs.reshape(-1))
        ids, scores = top_k_of(outputs, self.top_k)
        return writers.Predictions(keys, self.key_columns, ids, scores, self.predictor.labels,
                                   self.top_k)

    def empty(self) -> writers.Predictions:
        if self.sender is not None:
            return self.sender.empty()
        keys = {c.name: np.zeros(0, dtype=object if c.dtype == "string" else c.dtype)
                for c in self.key_columns}
        width = 1 if self.predictor.regressor else len(self.predictor.labels)
        shape = (0,) if self.predictor.regressor else (0, width)
        return self.predictions(keys, np.zeros(shape, np.float32))

class _Shard:
    """One input file's output: its predictions writer, its errors and its counts."""

    def __init__(self, plan: sources.InputPlan, index: int, fmt: str, output_dir: str):
        self.path, self.fmt, self.output_dir = plan.files[index], fmt, output_dir
        self.names = predictions_files.shard_names(index, len(plan.files), fmt)
        self.out = writers.ShardWriter(uris.join(output_dir, self.names["predictions"]), fmt)
        self.errors: List[ErrorRow] = []
        self.inputs = self.rows = 0
        self.expected = plan.expected[index]  # records the manifest lists, if it does
        self.unit = "record" if plan.fmt == "tfrecord" else "line"

    def add(self, chunk: Chunk, failed: List[ErrorRow], rows: int) -> None:
        self.errors += chunk.errors + failed
        self.inputs, self.rows = self.inputs + chunk.inputs, self.rows + rows

    def finish(self, empty) -> None:
        """Close the shard: rename its predictions into place, write its errors file."""
        missing = missing_records(self.path, self.expected, self.inputs)
        self.errors, self.inputs = self.errors + missing, self.inputs + len(missing)
        self.out.commit(empty)
        writers.write_errors(uris.join(self.output_dir, self.names["errors"]), self.fmt,
                             self.errors)
        if self.inputs != self.rows + len(self.errors):
            raise AssertionError(f"{self.path}: {self.inputs} records in but {self.rows} "
                                 f"predictions and {len(self.errors)} errors out")

    def counts(self) -> ShardCounts:
        first = self.errors[0] if self.errors else None
        where = f"{first.file}, {self.unit} {first.record}: {first.reason}" if first else ""
        return ShardCounts(self.path, self.names["predictions"], self.names["errors"],
                           self.inputs, self.rows, len(self.errors), where)
