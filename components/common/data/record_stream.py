"""The first records of TFRecord files on an object store, read as a stream.

A step that samples a Dataset (calibration rows, the rows a model is built on, a label
sample) needs a few hundred records; fetching whole shards for them (see
``common.platform.fetch_cache``) would read the Dataset. Here the files are read in order
through a buffered stream, record by record, only until enough rows are read, with TFRecord's
framing and CRC32C checks (those TensorFlow's reader applies), gzip decompressed as read.
"""

import gzip
import struct
from typing import BinaryIO, Iterator, List, Sequence

from tfkfp.components.common.platform import uris

_MASK_DELTA = 0xA282EAD8


class RecordStreamError(ValueError):
    """A TFRecord file whose framing or checksums are broken, named with the record."""


def head_records(files: Sequence[str], compression: str, records: int) -> List[bytes]:
    """Up to ``records`` serialized records: the first of the first file, then the next."""
    out: List[bytes] = []
    for uri in files:
        if len(out) >= records:
            break
        with uris.open_file(uri, "rb") as raw:
            stream = gzip.GzipFile(fileobj=raw) if compression.upper() == "GZIP" else raw
            for record in read_records(stream, uri):
                out.append(record)
                if len(out) >= records:
                    break
    return out


def read_records(stream: BinaryIO, where: str) -> Iterator[bytes]:
    """The records of a TFRecord stream, one by one, framing and CRC32C checked (a broken
    frame raises RecordStreamError naming ``where``, the record and the byte it starts at,
    the offset TensorFlow's "corrupted record at N" gives)."""
    index = offset = 0
    while True:
        header = stream.read(12)
        if not header:
            return
        at = f"(the record starts at byte {offset})"
        if len(header) < 12:
            raise RecordStreamError(f"{where}: record {index} is cut short in its header {at}")
        length, length_crc = struct.unpack("<QI", header)
        if _masked_crc(header[:8]) != length_crc:
            raise RecordStreamError(f"{where}: record {index} has a corrupt length {at}")
        body = stream.read(length + 4)
        if len(body) < length + 4:
            raise RecordStreamError(f"{where}: record {index} is cut short {at}")
        data, (data_crc,) = body[:length], struct.unpack("<I", body[length:])
        if _masked_crc(data) != data_crc:
            raise RecordStreamError(f"{where}: record {index} fails its checksum (its data "
                                    f"starts at byte {offset + 12})")
        yield data
        index += 1
        offset += 16 + length


def _masked_crc(data: bytes) -> int:
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
