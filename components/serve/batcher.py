"""Adaptive micro-batching: concurrent requests share one model call.

Requests queue in arrival order. One model call runs at a time, in a worker thread (the
event loop keeps reading requests meanwhile); when it ends, the requests that arrived during
it form the next call, up to ``max_batch_size`` rows. So a request that finds the model idle
and nothing queued runs at once, and batches grow with the load. Before a call with room
left, the loop is yielded to briefly so requests already received can join, for at most
``max_latency_ms`` after the oldest one arrived, and only while more keep coming. More than
``max_queue`` waiting requests: new ones are refused (OverloadedError, 503) instead of
queueing without bound. A failed call is retried request by request, so one request's
failure is not its neighbours'.
"""

import asyncio
import collections
import concurrent.futures
import dataclasses
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

from tfkfp.components.serve.errors import OverloadedError

Result = Tuple[np.ndarray, np.ndarray]  # top ids [rows, k], top scores [rows, k]


@dataclasses.dataclass
class _Item:
    features: Dict[str, np.ndarray]
    rows: int
    future: asyncio.Future
    arrived: float


class Batcher:
    """Groups ``predict`` calls into ``run(features) -> (ids, scores)`` calls.

    Args:
        run: the model on a batch of rows (called in one worker thread).
        max_batch_size: rows per call at most (a larger single request runs alone).
        max_latency_ms: the longest a batch waits for requests already arriving.
        max_queue: waiting requests beyond which new ones get OverloadedError.
        observe: ``observe(rows, requests, seconds)`` after each call (metrics).
    """

    def __init__(self, run: Callable[[Dict[str, np.ndarray]], Result], max_batch_size: int,
                 max_latency_ms: float, max_queue: int,
                 observe: Callable[[int, int, float], None] = lambda *_: None):
        self.run, self.max_batch_size, self.max_queue = run, max_batch_size, max_queue
        self.max_latency = max_latency_ms / 1000.0
        self.observe = observe
        self.queue: collections.deque = collections.deque()
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tfkfp-model")
        self.wake: asyncio.Event | None = None
        self.task: asyncio.Task | None = None

    @property
    def waiting(self) -> int:
        return len(self.queue)

    async def predict(self, features: Dict[str, np.ndarray], rows: int) -> Result:
        """The model's answer for these rows, computed in a batch with other requests."""
        if len(self.queue) >= self.max_queue:
            raise OverloadedError(f"{len(self.queue)} requests are waiting for the model, the "
                                  f"most the queue holds (max_queue {self.max_queue}); retry "
                                  "later or add replicas")
        loop = asyncio.get_running_loop()
        if self.task is None:
            self.wake = asyncio.Event()
            self.task = loop.create_task(self._dispatch())
        item = _Item(features, rows, loop.create_future(), time.monotonic())
        self.queue.append(item)
        self.wake.set()
        return await item.future

    async def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self.queue:
                self.wake.clear()
                await self.wake.wait()
            batch = await self._gather()
            started = time.monotonic()
            try:
                results = await loop.run_in_executor(self.pool, self._call, batch)
            except Exception:  # noqa: BLE001 - each request is retried alone below
                results = await loop.run_in_executor(self.pool, self._call_each, batch)
            self.observe(sum(i.rows for i in batch), len(batch), time.monotonic() - started)
            for item, result in zip(batch, results):
                if item.future.done():
                    continue
                if isinstance(result, BaseException):
                    item.future.set_exception(result)
                else:
                    item.future.set_result(result)

    async def _gather(self) -> List[_Item]:
        """The next batch: what is queued, plus what arrives while the loop is yielded to."""
        batch = [self.queue.popleft()]
        rows = batch[0].rows
        deadline = batch[0].arrived + self.max_latency
        while rows < self.max_batch_size:
            if not self.queue:
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0)  # let requests already received reach the queue
                if not self.queue:
                    break
            if rows + self.queue[0].rows > self.max_batch_size:
                break
            item = self.queue.popleft()
            batch.append(item)
            rows += item.rows
        return batch

    def _call(self, batch: List[_Item]) -> List[Result]:
        if len(batch) == 1:
            return [self.run(batch[0].features)]
        features = {n: np.concatenate([i.features[n] for i in batch])
                    for n in batch[0].features}
        ids, scores = self.run(features)
        out, start = [], 0
        for item in batch:
            out.append((ids[start:start + item.rows], scores[start:start + item.rows]))
            start += item.rows
        return out

    def _call_each(self, batch: List[_Item]) -> List[Result | BaseException]:
        out: List[Result | BaseException] = []
        for item in batch:
            try:
                out.append(self.run(item.features))
            except Exception as err:  # noqa: BLE001 - the request's own failure
                out.append(err)
        return out

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.pool.shutdown(wait=False)
