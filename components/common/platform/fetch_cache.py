"""Object-store files fetched into a bounded local folder, for TensorFlow's file readers.

TensorFlow has no S3 filesystem, so a tf.data reader of ``s3://`` shards asks this cache
for a local copy of each file as it opens it (``tf_path``, called from inside the input
pipeline) and hands it back once the file's records are read (``tf_release``, called by an
empty dataset concatenated after them; see ``common.data.reader``). Parallel interleave
opens the next files ahead on its own threads, so fetches overlap reading; pyarrow downloads
with several connections and without the GIL.

Local disk stays bounded: the folder holds the files being read plus those opened ahead,
about the reader's ``cycle_length`` shards, whatever the Dataset's size. A file whose reader
was dropped before its end (``take``, an interrupted epoch) goes once ``KEEP_FETCHED`` newer
files have been fetched. The folder is private, removed at exit, and after a kill by the
next cache made on this machine.
"""

import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
import threading
from typing import Dict, Iterator

from tfkfp.components.common.platform import object_store, scratch

PREFIX = "tfkfp-fetch-"
KEEP_FETCHED = 16  # a file not released after this many newer fetches is dropped anyway


class FetchCache:
    """One private folder of fetched files; ``local(uri)`` returns a file's local path."""

    def __init__(self, parent: str | None = None):
        parent = parent or tempfile.gettempdir()
        scratch.remove_abandoned(parent, PREFIX)
        self.folder = os.path.join(parent, scratch.owner_name(PREFIX))
        scratch.make_private_dir(self.folder)
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._held: Dict[str, int] = {}  # fetched, not yet released: path -> bytes
        self._numbers: Dict[str, int] = {}  # and its fetch number
        self.fetched_bytes = 0
        self.peak_bytes = 0
        atexit.register(self.close)

    def local(self, uri: str) -> str:
        """Fetch uri (whole) and return the local path, to be opened at once."""
        number = next(self._names)
        path = os.path.join(self.folder, f"{number:06d}-{os.path.basename(uri)}")
        object_store.copy(uri, path)
        size = os.path.getsize(path)
        with self._lock:
            self.fetched_bytes += size
            self._held[path] = size
            self._numbers[path] = number
            self.peak_bytes = max(self.peak_bytes, sum(self._held.values()))
            for old, n in list(self._numbers.items()):
                if n <= number - KEEP_FETCHED:
                    self._drop(old)
        return path

    def release(self, path: str) -> None:
        """The reader is done with path: its bytes leave the disk (at once, or when the last
        open handle closes)."""
        with self._lock:
            self._drop(path)

    def held_bytes(self) -> int:
        with self._lock:
            return sum(self._held.values())

    def _drop(self, path: str) -> None:
        self._held.pop(path, None)
        self._numbers.pop(path, None)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


_shared: FetchCache | None = None
_shared_lock = threading.Lock()


def shared() -> FetchCache:
    """The process's cache (one folder however many readers)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = FetchCache()
        return _shared


@contextlib.contextmanager
def readable(uri: str) -> Iterator[str]:
    """A path TensorFlow reads for uri while the block runs: uri itself, or a fetched copy
    released when the block ends."""
    if not object_store.handles(uri):
        yield uri
        return
    cache = shared()
    path = cache.local(uri)
    try:
        yield path
    finally:
        cache.release(path)


@contextlib.contextmanager
def readable_tree(uri: str) -> Iterator[str]:
    """A folder TensorFlow reads for the folder uri (a SavedModel) while the block runs: uri
    itself, or a fetched copy removed when the block ends."""
    if not object_store.handles(uri):
        yield uri
        return
    path = os.path.join(shared().folder, f"tree-{next(shared()._names):06d}")
    try:
        object_store.copy(uri, path)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def tf_path(uri) -> bytes:
    """For ``tf.py_function``: the local path of a fetched file (a URI TensorFlow reads
    itself is returned as it is)."""
    text = uri.numpy().decode("utf-8") if hasattr(uri, "numpy") else str(uri)
    if not object_store.handles(text):
        return text.encode("utf-8")
    return shared().local(text).encode("utf-8")


def tf_release(path) -> bool:
    """For ``tf.py_function``: the reader has read every record of this fetched file."""
    text = path.numpy().decode("utf-8") if hasattr(path, "numpy") else str(path)
    if _shared is not None and text.startswith(_shared.folder + os.sep):
        _shared.release(text)
    return False
