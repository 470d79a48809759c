"""What every input format shares: the column and chunk records, and arrow-to-NumPy."""

import dataclasses
import json
from typing import Tuple

import numpy as np

from tfkfp.components.common.data import missing
from tfkfp.components.common.platform import uris
from tfkfp.components.shard_tfrecords.errors import ShardInputError


@dataclasses.dataclass(frozen=True)
class RawColumn:
    """A column as found in the input, before roles are assigned."""

    name: str
    dtype: str  # float32 | int64 | string
    shape: Tuple[int, ...] = ()
    image_shape: Tuple[int, int, int] | None = None


@dataclasses.dataclass(frozen=True)
class Chunk:
    index: int
    fmt: str
    uri: str
    start: int = 0  # byte offset (csv, jsonl) or row group (parquet)
    end: int = 0
    files: Tuple[str, ...] = ()  # images: (path, class name) pairs, flattened
    root: str = ""  # images: the folder whose subfolders are classes

    @property
    def size(self) -> int:
        return self.end - self.start if self.fmt in ("csv", "jsonl") else 1


def check_unique_names(names, uri: str) -> None:
    """Refuse a file that names one column twice, naming it and its positions (from 1)."""
    seen = {}
    for position, name in enumerate(names, 1):
        if name in seen:
            raise ShardInputError(f"{uri} names column {name!r} twice (columns {seen[name]} "
                                  f"and {position}); each column needs its own name")
        seen[name] = position


def read_range(uri: str, start: int, end: int) -> bytes:
    with uris.open_file(uri) as f:
        f.seek(start)
        return f.read(end - start)


# The first bytes of files that a text pattern may match by mistake, and what they are.
_MAGIC = ((b"\x1f\x8b", "gzip-compressed data (gzip inputs are not read: decompress it)"),
          (b"PAR1", "a Parquet file (name it .parquet or set input_format)"),
          (b"PK\x03\x04", "a zip archive (an .npz?)"), (b"\x93NUMPY", "a NumPy .npy file"),
          (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
          (b"GIF8", "a GIF image"), (b"\x00\x00\x00", "binary data"))


def decode_text(data: bytes, uri: str, start: int = 0) -> str:
    """``data``, the bytes of ``uri`` from byte ``start`` (at a line's start), as UTF-8 text;
    a character cut at the very end is left out (a sample's last line).

    Raises:
        ShardInputError: a byte that is not UTF-8, named by file, line and column (bytes
            from 1), with what the file looks like when its first bytes say.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.reason == "unexpected end of data" and err.end == len(data):
            return data[:err.start].decode("utf-8")
        line = (first_line_number(uri, start) if start else 1) + data.count(b"\n", 0, err.start)
        column = err.start - data.rfind(b"\n", 0, err.start)
        head = data[:8] if start == 0 else read_range(uri, 0, 8)
        kind = next((what for magic, what in _MAGIC if head.startswith(magic)), "")
        looks = (f"; the file starts like {kind}, not text: did the input pattern match a "
                 "file it should not?") if kind else "; save the file as UTF-8"
        raise ShardInputError(f"{uri}, line {line}, column {column}: found byte "
                              f"0x{data[err.start]:02x}, which is not UTF-8 text{looks}"
                              ) from err


def first_line_number(uri: str, start: int) -> int:
    """1-based number of the line that begins at byte offset start."""
    with uris.open_file(uri) as f:
        return f.read(start).count(b"\n") + 1


def row_location(chunk: Chunk, row: int) -> str:
    """Where the chunk's row ``row`` (0-based) is in its input, for error messages; costs a
    read of the file up to the chunk for line-oriented formats, so only on failure paths."""
    if chunk.fmt in ("csv", "jsonl"):
        return f"{chunk.uri}, line {first_line_number(chunk.uri, chunk.start) + row}"
    if chunk.fmt == "parquet":
        return f"{chunk.uri}, row group {chunk.start}, row {row + 1}"
    if chunk.fmt == "images":
        return chunk.files[2 * row]
    return f"{chunk.uri}, row {row + 1}"


ARROW_TYPES = {"float32": "float32", "int64": "int64", "string": "string"}


def dtype_of_arrow(arrow_type, where: str) -> Tuple[str, Tuple[int, ...]]:
    import pyarrow as pa

    if pa.types.is_floating(arrow_type) or pa.types.is_null(arrow_type):
        return "float32", ()
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "int64", ()
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or \
            pa.types.is_binary(arrow_type):
        return "string", ()
    if pa.types.is_fixed_size_list(arrow_type):
        inner, shape = dtype_of_arrow(arrow_type.value_type, where)
        return inner, (arrow_type.list_size, *shape)
    raise ShardInputError(f"{where}: type {arrow_type} is not supported; expected numbers, "
                          "strings or fixed-length lists of them")


def to_numpy(array, col: RawColumn, where: str) -> np.ndarray:
    """An arrow column as a NumPy array of the column's dtype and shape."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        if col.shape or not missing.can_hold_gaps(col.dtype):
            row = next(i for i, v in enumerate(array.is_null().to_pylist()) if v)
            raise ShardInputError(f"{where}, row {row + 1}, column {col.name!r}: "
                                  f"{missing_problem(col.name, col.dtype)}")
        array = missing.fill_nulls(array, col.dtype)
    if pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        return lists_to_numpy(array, col, where)
    if col.dtype == "string":
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)
    return array.to_numpy(zero_copy_only=False).astype(np.float32 if col.dtype == "float32"
                                                        else np.int64)


def set_column_type(name: str, dtype: str) -> str:
    """The remedy in one wording, its value as JSON: the same text works in Python, in
    ``tfkfp run --set column_types=...`` and in the KFP UI."""
    return f"set column_types {json.dumps({name: dtype})}"


def missing_problem(name: str, dtype: str) -> str:
    """What to say of a blank in a column that cannot hold one."""
    if dtype == "int64":
        return (f"missing value; expected int64, which cannot hold a gap "
                f"({set_column_type(name, 'float32')} to keep the rows, their gaps imputed)")
    return f"missing value; expected {dtype}"


def lists_to_numpy(array, col: RawColumn, where: str) -> np.ndarray:
    import pyarrow.compute as pc

    width = col.shape[0] if col.shape else 1
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(lengths != width)
    if len(bad):
        raise ShardInputError(f"{where}, row {bad[0] + 1}, column {col.name!r}: found a list "
                              f"of {lengths[bad[0]]} values, expected {width}")
    flat = pc.list_flatten(array).to_numpy(zero_copy_only=False)
    dtype = object if col.dtype == "string" else np.dtype(col.dtype)
    return np.asarray(flat, dtype=dtype).reshape((len(array), *col.shape))


def list_type(values, arrow_type, where: str) -> Tuple[str, Tuple[int, ...]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_list(arrow_type):
        lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False)
        inner, _ = dtype_of_arrow(arrow_type.value_type, where)
        return inner, (int(lengths[0]) if len(lengths) else 0,)
    return dtype_of_arrow(arrow_type, where)


def is_list(arrow_type) -> bool:
    import pyarrow as pa

    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)


def empty_dtype(col: RawColumn):
    return object if col.dtype == "string" else np.dtype(col.dtype)
