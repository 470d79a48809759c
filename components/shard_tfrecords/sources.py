"""Where sharding's input comes from: finding files, their format, columns and chunks.

A chunk is a unit of work for one worker thread: a line-aligned byte range of a CSV or
JSON Lines file, a Parquet row group, a whole .npz file, or a list of image files. The
formats live in ``formats/``; nothing here imports TensorFlow.
"""

import csv
import hashlib
import json
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np

from tfkfp.components.common.data import formats, missing
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.follow import describe_error
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import (
    Chunk,
    RawColumn,
    check_unique_names,
    read_range,
    row_location,
)
from tfkfp.components.shard_tfrecords.formats.binary import Npz, Parquet
from tfkfp.components.shard_tfrecords.formats.images import (
    IMAGE_KEY,
    IMAGE_LABEL,
    Images,
    class_folders,
)
from tfkfp.components.shard_tfrecords.formats.text import Csv, Jsonl
from tfkfp.components.shard_tfrecords.options import check_input_format

__all__ = ["Chunk", "RawColumn", "IMAGE_KEY", "IMAGE_LABEL", "resolve_files",
           "infer_columns", "plan_chunks", "read_chunk"]

# each format sharding reads (common.data.formats) and the reader of its chunks
_READERS = {"csv": Csv, "jsonl": Jsonl, "parquet": Parquet, "npz": Npz, "images": Images}


def resolve_files(input_uri: str, input_format: str = "auto") -> Tuple[str, List[str]]:
    """The input format and its files, sorted; a folder of class subfolders is 'images'."""
    check_input_format(input_format)
    try:
        fmt, files = _listed(input_uri, input_format)
    except ShardInputError:
        raise
    except Exception as err:  # the store's own error: name the input and what to check
        if not uris.is_remote(input_uri):
            raise
        raise ShardInputError(
            f"input_uri {input_uri!r} could not be read: {describe_error(err)}; check that "
            "this step reaches the store and has credentials for it (for gs://, the pod's "
            "service account or GOOGLE_APPLICATION_CREDENTIALS; for s3:// and minio://, "
            "AWS_ACCESS_KEY_ID and AWS_ENDPOINT_URL)") from err
    return fmt or (input_format if input_format != "auto" else _format_of(files)), files


def _listed(input_uri: str, input_format: str) -> Tuple[str, List[str]]:
    """("images", [folder]) for an image folder, else ("", the input files)."""
    if any(ch in input_uri for ch in "*?["):
        files = [f for f in uris.glob(input_uri) if not uris.isdir(f)]
        if not files:
            raise ShardInputError(f"no files match the pattern {input_uri}")
        return "", files
    if not uris.exists(input_uri):
        raise ShardInputError(f"input path {input_uri} does not exist")
    if not uris.isdir(input_uri):
        return "", [input_uri]
    if input_format in ("auto", "images") and class_folders(input_uri):
        return "images", [input_uri]
    files = [uris.join(input_uri, n) for n in uris.listdir(input_uri)
             if not n.startswith((".", "_")) and not uris.isdir(uris.join(input_uri, n))]
    if not files:
        raise ShardInputError(f"input folder {input_uri} holds no data files")
    return "", files


def check_output_outside(input_uri: str, output: str, name: str = "dataset") -> None:
    """Refuse an output folder inside a folder given as the input: the next run would read
    it as input (its train/ and eval/ folders as classes of images)."""
    if any(ch in input_uri for ch in "*?[") or not uris.isdir(input_uri):
        return  # a pattern or a file: the output's files are never among its matches
    if _inside(output, input_uri):
        raise ShardInputError(
            f"{name} {output} is inside the input folder {input_uri}: the next run would "
            "read that Dataset as input (its train/ and eval/ folders as classes of "
            f"images); write it outside {input_uri}, or give input_uri as a pattern "
            f"such as {uris.join(input_uri, '*.csv')}")


def _inside(path: str, folder: str) -> bool:
    if uris.is_remote(path) or uris.is_remote(folder):
        return path.rstrip("/").startswith(folder.rstrip("/") + "/")
    path, folder = (os.path.abspath(uris.local_path(p)) for p in (path, folder))
    return os.path.commonpath([path, folder]) == folder


def fingerprint(input_uri: str, input_format: str = "auto") -> str:
    """A digest of the input files' names, sizes and modification times (object generation
    times on gs://): one stat per file, nothing read, and different when a file is added,
    removed, replaced or changed. The cache key of a sharding step takes it, so new data at
    the same URI is sharded again rather than served from the cache."""
    fmt, files = resolve_files(input_uri, input_format)
    if fmt == "images":  # every image of every class folder
        files = [f for folder in files for name in class_folders(folder)
                 for f in uris.glob(uris.join(uris.join(folder, name), "*"))]
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\t{uris.size(path)}\t{uris.mtime(path)!r}\n".encode())
    return f"sha256:{digest.hexdigest()}"


def _format_of(files: Sequence[str]) -> str:
    found = formats.formats_of(files, formats.SHARD)
    if None in found or len(found) != 1:
        kinds = sorted({os.path.splitext(f)[1] or "(none)" for f in files})
        raise ShardInputError(
            f"cannot tell the input format from the file extensions {kinds}; expected one "
            f"kind among {sorted(formats.extensions(formats.SHARD))}, or set input_format to "
            f"one of {formats.names(formats.SHARD)}")
    return found.pop()


def infer_columns(fmt: str, files: List[str], column_types: Dict[str, str]) -> List[RawColumn]:
    """The columns of the input, checked to be the same in every file."""
    reader = _READERS[fmt]
    first = reader.columns(files[0], column_types)
    check_unique_names([c.name for c in first], files[0])
    for other in files[1:]:
        cols = reader.columns(other, column_types, cheap=True)
        if [c.name for c in cols] != [c.name for c in first]:
            raise ShardInputError(
                f"mixed schemas: {other} has columns {[c.name for c in cols]} but "
                f"{files[0]} has {[c.name for c in first]}")
    unknown = sorted(set(column_types) - {c.name for c in first})
    if unknown:
        raise ShardInputError(f"column_types names columns {unknown} that are not in "
                              f"{files[0]}; its columns are {[c.name for c in first]}")
    return first


def plan_chunks(fmt: str, files: List[str]) -> List[Chunk]:
    chunks: List[Chunk] = []
    for uri in files:
        chunks += _READERS[fmt].chunks(uri, len(chunks))
    return chunks


def read_chunk(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
    """The chunk's rows as ``{column: array}``, gaps as NaN or "" (see common.data.missing);
    bad data raises ShardInputError."""
    data = _READERS[chunk.fmt].read(chunk, columns)
    for col in columns:
        if col.dtype == "float32" and col.image_shape is None:
            _check_finite(data[col.name], col, chunk, columns)
    return data


def _check_finite(values: np.ndarray, col: RawColumn, chunk: Chunk,
                  columns: List[RawColumn]) -> None:
    """``inf`` in a feature turns the training loss into NaN (or, on some CPUs, silently
    into a chance-level model): refuse it where it enters, naming the row. NaN is a gap.
    pyarrow reads a number past float32's range as ``inf``, so the message quotes the cell
    as the file holds it."""
    hit = missing.first_infinite(values)
    if hit is None:
        return
    row, position = hit
    found = _as_written(chunk, row, position, col, columns) or \
        values.reshape(len(values), -1)[row, position]
    raise ShardInputError(f"{row_location(chunk, row)}, column {col.name!r}: "
                          f"{missing.non_finite_problem(found)}")


def _as_written(chunk: Chunk, row: int, position: int, col: RawColumn,
                columns: List[RawColumn]) -> str:
    """The value of a CSV or JSON Lines row as its line holds it, or "" where it cannot be
    told (other formats); reads the chunk again, so only on the failure path."""
    if chunk.fmt not in ("csv", "jsonl"):
        return ""
    try:
        line = read_range(chunk.uri, chunk.start, chunk.end).decode("utf-8").splitlines()[row]
        if chunk.fmt == "csv":
            return next(csv.reader([line]))[[c.name for c in columns].index(col.name)].strip()
        value = json.loads(line)[col.name]
        return str(value[position] if isinstance(value, list) else value)
    except (ValueError, IndexError, KeyError, TypeError, StopIteration):
        return ""
