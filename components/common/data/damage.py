"""Naming the shard that TensorFlow's reader found damaged.

tf.data's TFRecord reader stops at a record whose checksum fails with ``DataLossError:
corrupted record at 11754``: an offset, but no file. A shard with one flipped byte keeps its
size, so the manifest's size check (``dataset.check_sizes``) lets it through. On that error a
reader asks ``damaged_shards``: each shard's CRC32C against the one the manifest lists, and
for a shard that differs, its first broken record and the byte it starts at (the offset
TensorFlow gave). Every shard is read once, on the failure path only.
"""

import contextlib
import gzip
import re
import zlib
from typing import Iterator, List

from tfkfp.components.common.data.dataset import DatasetMismatchError, Manifest, is_dataset
from tfkfp.components.common.data.record_stream import RecordStreamError, read_records
from tfkfp.components.common.platform import uris

SHOWN = 5  # damaged shards a message names (and how many more)


class DamagedShardError(DatasetMismatchError):
    """A shard whose bytes are not those written, though its size is: named with the record."""


@contextlib.contextmanager
def shards_named_on_data_loss(dataset: str) -> Iterator[None]:
    """While the block reads the Dataset directory ``dataset``, TensorFlow's DataLossError
    becomes a DamagedShardError naming the damaged shards; when none is (a file pattern, a
    damaged file that is not a shard), TensorFlow's error goes on as it is."""
    import tensorflow as tf

    try:
        yield
    except tf.errors.DataLossError as err:
        found = damaged_shards(dataset) if is_dataset(dataset) else []
        if not found:
            raise
        said = re.search(r"corrupted record at \d+", err.message or "")
        said = said[0] if said else (err.message or str(err)).strip().splitlines()[0][:200]
        more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        raise DamagedShardError(
            f"{len(found)} shard(s) of {dataset} are damaged, their bytes no longer those "
            f"written: {'; '.join(found[:SHOWN])}{more} (TensorFlow: {said}). Shard the data "
            "again, or restore the files") from err


def damaged_shards(dataset: str) -> List[str]:
    """``<shard>: <what is wrong>`` for each shard of the Dataset directory ``dataset`` whose
    bytes fail its CRC32C in the manifest or TFRecord's own checks."""
    manifest = Manifest.load(dataset)
    found = []
    for split, body in manifest.splits.items():
        for file, entry in zip(manifest.shard_files(split, check=False), body["shards"]):
            problem = _problem(file, entry.get("crc32c"), manifest.compression)
            if problem:
                found.append(f"{file}: {problem}")
    return found


def _problem(file: str, expected: str | None, compression: str) -> str:
    """What is wrong with one shard ("" when nothing is found)."""
    if not uris.exists(file):
        return "missing"
    crc = _crc32c(file)
    if expected and crc == expected:
        return ""
    try:
        with uris.open_file(file, "rb") as raw:
            stream = gzip.GzipFile(fileobj=raw) if compression == "gzip" else raw
            for _ in read_records(stream, file):
                pass
    except RecordStreamError as err:
        return str(err).removeprefix(f"{file}: ")
    except (OSError, EOFError, zlib.error) as err:  # gzip's own checks
        return f"cannot be decompressed ({err})"
    return f"its CRC32C is {crc}, the manifest lists {expected}" if expected else ""


def _crc32c(file: str) -> str:
    import google_crc32c

    crc = google_crc32c.Checksum()
    with uris.open_file(file, "rb") as f:
        while block := f.read(8 << 20):
            crc.update(block)
    return crc.hexdigest().decode()
