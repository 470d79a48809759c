"""batch_predict's endpoint mode, the sending: a chunk's rows in mini-batches, several in
flight, cut under the protocol's request size and narrowed down to the rows a server refuses;
the answers as prediction rows naming the endpoint and model version that answered, the
refused rows as error rows (endpoint.py connects; the module there says the whole).

Each request carries an id of its own (v2 returns it). An answer that is not its request's
(the protocol's ``mismatch``: another id, another number of rows) makes an error row of
each row sent, naming what did not match, and is counted (``mismatched``): a row never
carries the answer to another request. While requests are in flight, a line every
``PROGRESS_EVERY_S`` seconds gives the rows answered, the rate and the requests waited on
and for how long (``InFlight``), so a slow endpoint shows in the step's log at once.
"""

import concurrent.futures
import contextlib
import itertools
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Dict, Iterator, List, Tuple

import numpy as np

from tfkfp.components.batch_predict import writers
from tfkfp.components.batch_predict.errors import EndpointError, RowsRefused
from tfkfp.components.batch_predict.records import Chunk, ErrorRow
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.endpoint.protocols import Answers
from tfkfp.components.common.platform.progress import human

if TYPE_CHECKING:
    from tfkfp.components.batch_predict.endpoint import Endpoint

log = logging.getLogger("tfkfp")

ANSWERED_BY = ("endpoint", "model_version")  # the columns naming who answered a row
PROGRESS_EVERY_S = 5.0
MISMATCHES_LOGGED = 5  # mismatched answers logged one by one; the others are counted


Span = Tuple[int, int, Answers]


class InFlight:
    """The requests in flight and the rows answered, logged every ``every_s`` seconds by a
    thread of its own while any request is in flight: the chunk-level progress line only
    moves when a whole chunk is answered, so a stalled request would be silent there."""

    def __init__(self, url: str, every_s: float):
        self.url, self.every_s, self.rows = url, every_s, 0
        self._first: float | None = None
        self._since: Dict[int, float] = {}  # request -> when it was first sent
        self._tokens = itertools.count()
        self._lock, self._closed = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name="tfkfp-endpoint-progress")
        self._thread.start()

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """A request in flight for the block (its retries included)."""
        token, now = next(self._tokens), time.monotonic()
        with self._lock:
            self._first = now if self._first is None else self._first
            self._since[token] = now
        try:
            yield
        finally:
            with self._lock:
                del self._since[token]

    def answered(self, rows: int) -> None:
        with self._lock:
            self.rows += rows

    def line(self, now: float) -> str:
        with self._lock:
            waiting, oldest = len(self._since), min(self._since.values(), default=now)
            rows, first = self.rows, now if self._first is None else self._first
        rate = rows / max(now - first, 1e-9)
        return (f"endpoint {self.url}: {human(rows)} rows answered, {human(rate)} rows/s; "
                f"waiting on {waiting} request(s), the oldest for {now - oldest:.1f} s")

    def _watch(self) -> None:
        while not self._closed.wait(self.every_s):
            if self._since:
                log.info(self.line(time.monotonic()))

    def close(self) -> None:
        self._closed.set()
        self._thread.join()


class Sender:
    """Sends a chunk's rows in mini-batches, several in flight, and turns the answers into
    prediction rows and the refused rows into error rows."""

    def __init__(self, endpoint: "Endpoint", key_columns: List[Column], top_k: int):
        self.endpoint, self.key_columns, self.top_k = endpoint, key_columns, top_k
        self.options, self.client = endpoint.options, endpoint.client
        self.pool = concurrent.futures.ThreadPoolExecutor(self.options.concurrency,
                                                          "tfkfp-endpoint")
        self.run_id, self._request_ids = uuid.uuid4().hex[:12], itertools.count()
        self.mismatched = 0  # answers that were not their request's
        self._lock = threading.Lock()
        self.in_flight = InFlight(endpoint.predict_url, PROGRESS_EVERY_S)
        log.info("sending to %s: %d rows a request, %d in flight; each request waits %g s "
                 "per read (endpoint_timeout_s), %d attempt(s) (endpoint_retries %d)",
                 endpoint.predict_url, self.options.batch_rows, self.options.concurrency,
                 self.options.timeout_s, self.options.retries + 1, self.options.retries)

    def predict(self, chunk: Chunk, path: str) -> Tuple[writers.Predictions, List[ErrorRow]]:
        size = self.options.batch_rows
        spans = list(self.pool.map(lambda lo: self._answered(chunk.features, lo, min(
            lo + size, chunk.rows)), range(0, chunk.rows, size)))
        good = [s for found, _ in spans for s in found]
        bad = [b for _, refused in spans for b in refused]
        errors = [ErrorRow(path, int(chunk.records[i]), -1, reason) for i, reason in bad]
        if not good:
            return self.empty(), errors
        keep = np.concatenate([np.arange(lo, hi) for lo, hi, _ in good])
        keys = {c.name: chunk.keys[c.name][keep] for c in self.key_columns}
        return self.predictions(keys, [a for _, _, a in good]), errors

    def _answered(self, features: Dict[str, np.ndarray], lo: int, hi: int
                  ) -> Tuple[List[Span], List[Tuple[int, str]]]:
        """The answered spans of rows [lo, hi), in order, and the refused rows alone, each
        with why."""
        protocol = self.endpoint.protocol
        request_id = f"tfkfp-{self.run_id}-{next(self._request_ids)}"
        body = protocol.encode({n: v[lo:hi] for n, v in features.items()}, request_id)
        limit = protocol.max_request_bytes
        if limit is not None and len(body) > limit:
            if hi - lo == 1:
                return [], [(lo, f"the row alone makes a request of {len(body)} bytes, over "
                                 f"the endpoint's limit of {limit} bytes; it was not sent")]
            return self._split(features, lo, hi, -(-len(body) // limit))
        try:
            with self.in_flight.request():
                answer = self.client.post(protocol.predict_path(self.options.model), body)
        except RowsRefused as err:
            if hi - lo == 1:
                return [], [(lo, f"the endpoint refused the row: {err}")]
            return self._split(features, lo, hi, 2)
        problem = protocol.mismatch(answer, hi - lo, request_id)
        if problem:
            return [], self._mismatch(request_id, lo, hi, problem)
        answers = protocol.decode(answer, hi - lo)
        self.in_flight.answered(hi - lo)
        return [(lo, hi, answers)], []

    def _mismatch(self, request_id: str, lo: int, hi: int, problem: str
                  ) -> List[Tuple[int, str]]:
        """Each row of a request whose answer was not its own, as an error row saying why."""
        with self._lock:
            self.mismatched += 1
            count = self.mismatched
        if count <= MISMATCHES_LOGGED:
            log.warning("%s: the answer to request %s (%d rows) does not match it: %s; its "
                        "rows are error rows", self.endpoint.predict_url, request_id,
                        hi - lo, problem)
        reason = (f"the endpoint's answer does not match request {request_id} of {hi - lo} "
                  f"row(s): {problem}; the row was not predicted")
        return [(i, reason) for i in range(lo, hi)]

    def _split(self, features: Dict[str, np.ndarray], lo: int, hi: int, parts: int
               ) -> Tuple[List[Span], List[Tuple[int, str]]]:
        """Rows [lo, hi) sent as ``parts`` (at least 2) contiguous parts, in order."""
        cuts = np.linspace(lo, hi, min(max(parts, 2), hi - lo) + 1).round().astype(int)
        found = [self._answered(features, int(a), int(b)) for a, b in zip(cuts, cuts[1:])]
        return [s for spans, _ in found for s in spans], [r for _, bad in found for r in bad]

    def predictions(self, keys: Dict[str, np.ndarray], answers: List[Answers]
                    ) -> writers.Predictions:
        versions = np.array([a.version or self.endpoint.served.version for a in answers
                             for _ in range(a.rows)], dtype=object)
        extra = {"endpoint": np.full(len(versions), self.endpoint.predict_url, dtype=object),
                 "model_version": versions}
        if answers[0].values is not None or self.endpoint.regressor:
            return writers.Predictions(keys, self.key_columns, values=np.concatenate(
                [self._values(a) for a in answers]), extra=extra)
        classes = [row[:self.top_k] for a in answers for row in self._classes(a)]
        ids, labels = self._ids(np.concatenate([a.class_ids for a in answers]), classes)
        scores = np.concatenate([a.scores[:, :self.top_k] for a in answers])
        return writers.Predictions(keys, self.key_columns, ids, scores, labels, self.top_k,
                                   extra=extra)

    def _values(self, answers: Answers) -> np.ndarray:
        if answers.values is None:
            raise EndpointError(f"{self.endpoint.predict_url} answered classes; the model "
                                "was taken to be a regressor")
        return answers.values

    def _classes(self, answers: Answers) -> List[List[str]]:
        if answers.classes is None:
            raise EndpointError(f"{self.endpoint.predict_url} answered values; the model "
                                "was taken to be a classifier")
        listed = min(len(row) for row in answers.classes)
        if listed < self.top_k or answers.scores.shape[1] < self.top_k:
            raise EndpointError(f"{self.endpoint.predict_url} answers {listed} class(es) per "
                                f"row; top_k is {self.top_k}: serve with a larger top_k or "
                                "lower it")
        return answers.classes

    def _ids(self, first_ids: np.ndarray, classes: List[List[str]]
             ) -> Tuple[np.ndarray, List[str]]:
        """Class ids [rows, top_k] into a list of class names the writers look them up in.

        The model's labels, when its artifact was given. Else the answers name a row's best
        class with its id, but the others by name only: a table is built with every best
        class at its id and the other names after the largest id, so every name is written
        as answered; only the best class's id is written as an id.
        """
        labels = self.endpoint.model.labels
        table = {name: i for i, name in enumerate(labels)} if labels else \
            {row[0]: int(i) for row, i in zip(classes, first_ids)}
        for row in classes:
            for name in row:
                if name not in table:
                    if labels:
                        raise EndpointError(f"{self.endpoint.predict_url} answered class "
                                            f"{name!r}, which the model artifact's classes "
                                            f"{labels[:20]} do not have")
                    table[name] = max(table.values(), default=-1) + 1
        names = [""] * (max(table.values()) + 1)
        for name, i in table.items():
            names[i] = name
        ids = np.array([[table[name] for name in row] for row in classes], np.int64)
        return ids.reshape(len(classes), self.top_k), names

    def empty(self) -> writers.Predictions:
        keys = {c.name: np.zeros(0, dtype=object if c.dtype == "string" else c.dtype)
                for c in self.key_columns}
        extra = {name: np.zeros(0, dtype=object) for name in ANSWERED_BY}
        if self.endpoint.regressor:
            return writers.Predictions(keys, self.key_columns, values=np.zeros(0, np.float32),
                                       extra=extra)
        return writers.Predictions(keys, self.key_columns, np.zeros((0, self.top_k), np.int64),
                                   np.zeros((0, self.top_k), np.float32),
                                   self.endpoint.model.labels or [], self.top_k, extra=extra)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.in_flight.close()
