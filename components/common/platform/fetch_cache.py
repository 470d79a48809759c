"""Object-store files fetched into a bounded local folder, for TensorFlow's file readers.

TensorFlow has no S3 filesystem, so a tf.data reader of ``s3://`` shards asks this cache
for a local copy of each file as it opens it (``tf_path``, called from inside the input
pipeline) and hands it back once the file's records are read (``tf_release``, called by an
empty dataset concatenated after them; see ``common.data.reader``). Parallel interleave
opens the next files ahead on its own threads, so fetches overlap reading; pyarrow downloads
with several connections and without the GIL.

Local disk stays bounded: the folder holds the files being read plus those opened ahead, and
the reader opens no more files at once than ``TFKFP_FETCH_CACHE_MB`` (512 MB) allows for its
biggest shard (``files_at_once``), whatever the Dataset's size; shards too big to read one
with read-ahead are read one at a time, and a shard bigger than the budget still is (the
cache warns). A fetch never waits for room: tf.data
creates interleave inputs one at a time, so a waiting fetch would stall the reader. A file
whose reader was dropped before its end (a repeating input when ``fit`` returns, ``take``)
goes when a new reader starts or the cache is over its budget, once no handle has it open
``ABANDONED_SECONDS`` after its fetch (or ``KEEP_FETCHED`` newer files were fetched). The
folder is private, removed at exit, and after a kill by the next cache made on this machine.
"""

import atexit
import contextlib
import itertools
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Dict, Iterator

from tfkfp.components.common.platform import object_store, scratch
from tfkfp.components.common.platform.progress import log

PREFIX = "tfkfp-fetch-"
# Over the budget, a file not released after this many newer fetches is taken for one whose
# reader was dropped, and removed: far more than a reader holds at once (FILES_PER_READ x 8).
KEEP_FETCHED = 64
# A fetched file no handle of this process has open this long after its fetch belongs to a
# reader that was dropped before its end (a repeating input when fit returns, a probe): a
# reader opens its file as soon as it is fetched and keeps it open until it is read.
ABANDONED_SECONDS = 30.0
BUDGET_ENV = "TFKFP_FETCH_CACHE_MB"
SUMMARY = "fetched from the object store:"  # the line a step's log ends with
DEFAULT_BUDGET_MB = 512
# Files a parallel interleave holds at once, per file it reads (those it opens ahead),
# measured with tf.data on 2 cores: 16 shards held at cycle_length 8, 6 at 2, 12 at 4.
FILES_PER_READ = 3


def files_at_once(files, wanted: int) -> int:
    """How many of these object-store files a reader may read at once (its cycle_length),
    at most ``wanted``: what the budget holds of the biggest, with those opened ahead. 0:
    not even one with read-ahead; read them one after the other, none opened ahead."""
    import concurrent.futures

    shared().drop_abandoned()  # what readers dropped before their end left behind
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        biggest = max(pool.map(object_store.size, files), default=1)
    return min(wanted, budget_from_env() // (FILES_PER_READ * max(biggest, 1)))


def budget_from_env() -> int:
    """The cache's budget in bytes: ``TFKFP_FETCH_CACHE_MB`` or 512 MB. One file is always
    admitted, so a shard bigger than the budget is read too."""
    value = os.environ.get(BUDGET_ENV, "")
    try:
        megabytes = float(value) if value else DEFAULT_BUDGET_MB
    except ValueError as err:
        raise ValueError(f"{BUDGET_ENV}={value!r} is not a number of megabytes") from err
    return int(megabytes * (1 << 20))


class FetchCache:
    """One private folder of fetched files; ``local(uri)`` returns a file's local path."""

    def __init__(self, parent: str | None = None, budget_bytes: int | None = None):
        parent = parent or tempfile.gettempdir()
        self.budget_bytes = budget_bytes if budget_bytes is not None else budget_from_env()
        scratch.remove_abandoned(parent, PREFIX)
        self.folder = os.path.join(parent, scratch.owner_name(PREFIX))
        scratch.make_private_dir(self.folder)
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._warned = False
        self._held: Dict[str, int] = {}  # fetched, not yet released: path -> bytes
        self._numbers: Dict[str, int] = {}  # and its fetch number
        self._fetched_at: Dict[str, float] = {}  # and when it was fetched (monotonic)
        self.fetched_bytes = 0
        self.fetched_files = 0
        self.peak_bytes = 0
        self._closed = False
        atexit.register(self.close)

    def local(self, uri: str) -> str:
        """Fetch uri (whole) and return the local path, to be opened at once."""
        number = next(self._names)
        path = os.path.join(self.folder, f"{number:06d}-{os.path.basename(uri)}")
        object_store.copy(uri, path)
        size = os.path.getsize(path)
        with self._lock:
            if sum(self._held.values()) + size > self.budget_bytes:
                self._drop_abandoned()
                for old, n in list(self._numbers.items()):  # readers dropped before the end
                    if n <= number - KEEP_FETCHED:
                        self._drop(old)
            self._held[path] = size
            self._numbers[path] = number
            self._fetched_at[path] = time.monotonic()
            self.fetched_bytes += size
            self.fetched_files += 1
            self.peak_bytes = max(self.peak_bytes, sum(self._held.values()))
            if self.peak_bytes > self.budget_bytes and not self._warned:
                self._warned = True
                log.warning("the fetch cache holds %d bytes, over its budget of %d (%s): "
                            "the shards are bigger than the budget allows for the files "
                            "read at once", self.peak_bytes, self.budget_bytes, BUDGET_ENV)
        return path

    def scratch_file(self, name: str) -> str:
        """A private path in the cache's folder for a small file of the caller's (removed
        with the folder)."""
        return os.path.join(self.folder, f"{next(self._names):06d}-{name}")

    def release(self, path: str) -> None:
        """The reader is done with path: its bytes leave the disk (at once, or when the last
        open handle closes)."""
        with self._lock:
            self._drop(path)

    def held_bytes(self) -> int:
        with self._lock:
            return sum(self._held.values())

    def drop_abandoned(self) -> None:
        """Remove the files of readers dropped before their end (a new reader starts)."""
        with self._lock:
            self._drop_abandoned()

    def _drop_abandoned(self) -> None:
        open_now = _open_paths(self.folder)
        if open_now is None:
            return  # no /proc: the fetch-count rule alone
        now = time.monotonic()
        for path, at in list(self._fetched_at.items()):
            if path not in open_now and now - at > ABANDONED_SECONDS:
                self._drop(path)

    def _drop(self, path: str) -> None:
        self._held.pop(path, None)
        self._numbers.pop(path, None)
        self._fetched_at.pop(path, None)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.fetched_bytes and not self._closed:  # the step's log says what it read
            print(f"{SUMMARY} {self.fetched_files} shard file(s), {self.fetched_bytes} bytes; "
                  f"at most {self.peak_bytes} bytes on local disk at once (budget "
                  f"{self.budget_bytes})", file=sys.stderr, flush=True)
        self._closed = True


def _open_paths(folder: str) -> set | None:
    """Paths under folder that this process has open (None where /proc cannot say)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(folder + os.sep):
            found.add(target)
    return found


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
