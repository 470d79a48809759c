"""What the readers hand to the predictor: parsed batches, and the records that failed.

Parsing and prediction both find a failing batch's bad records by halving
(``common.platform.halving.split_failures``).
"""

import dataclasses
import queue
import threading
from typing import Dict, Iterator, List

import numpy as np


@dataclasses.dataclass(frozen=True)
class ErrorRow:
    file: str
    record: int  # record index in a TFRecord file, line number in a text file
    offset: int  # byte offset of the record in the (uncompressed) file; -1 when unknown
    reason: str


@dataclasses.dataclass
class Chunk:
    """A reader's unit of output: parsed rows (maybe none) plus the records that failed."""

    features: Dict[str, np.ndarray]
    keys: Dict[str, np.ndarray]
    records: np.ndarray  # int64 record index (or line) of each parsed row
    errors: List[ErrorRow]

    @property
    def rows(self) -> int:
        return len(self.records)

    @property
    def inputs(self) -> int:
        return self.rows + len(self.errors)


def concat_columns(parts: List[Dict[str, np.ndarray]], names: List[str]) -> Dict[str, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    return {n: np.concatenate([p[n] for p in parts]) for n in names}


def prefetch(items: Iterator, ahead: int) -> Iterator:
    """Run an iterator in a background thread, ``ahead`` items in advance."""
    box: queue.Queue = queue.Queue(maxsize=ahead)
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        box.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            box.put((done, None))
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            box.put((done, err))

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while True:
            item, err = box.get()
            if err is not None:
                raise err
            if item is done:
                return
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)
