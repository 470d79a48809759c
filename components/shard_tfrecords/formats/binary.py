"""Parquet (a chunk per row group) and NumPy .npz (a chunk per file)."""

import io
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.platform import uris
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import (
    Chunk,
    RawColumn,
    dtype_of_arrow,
    empty_dtype,
    is_list,
    list_type,
    to_numpy,
)


class Parquet:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        schema = _parquet_file(uri).schema_arrow
        cols = []
        for field in schema:
            dtype, shape = dtype_of_arrow(field.type, f"{uri}, column {field.name!r}") \
                if not is_list(field.type) else _parquet_list(uri, field)
            cols.append(RawColumn(field.name, column_types.get(field.name, dtype), shape))
        return cols

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        groups = _parquet_file(uri).num_row_groups
        return [Chunk(first_index + g, "parquet", uri, g, g + 1) for g in range(max(groups, 1))]

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        pf = _parquet_file(chunk.uri)
        if pf.num_row_groups == 0:
            return {c.name: np.zeros((0, *c.shape), dtype=empty_dtype(c)) for c in columns}
        table = pf.read_row_group(chunk.start, columns=[c.name for c in columns])
        where = f"{chunk.uri}, row group {chunk.start}"
        return {c.name: to_numpy(table.column(c.name), c, where) for c in columns}


def _parquet_list(uri: str, field) -> Tuple[str, Tuple[int, ...]]:
    first = _parquet_file(uri).read_row_group(0, columns=[field.name]).column(0)
    return list_type(first, field.type, f"{uri}, column {field.name!r}")


def _parquet_file(uri: str):
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(uris.open_file(uri) if uris.is_remote(uri) else uri)
    except Exception as err:
        raise ShardInputError(f"{uri} is not a readable Parquet file: {err}") from err


class Npz:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        arrays = _load_npz(uri)
        counts = {name: len(a) if a.ndim else 0 for name, a in arrays.items()}
        if len(set(counts.values())) != 1:
            raise ShardInputError(f"{uri}: arrays have different numbers of rows {counts}; "
                                  "expected the same first dimension for every array")
        return [RawColumn(n, column_types.get(n, _numpy_dtype(a, uri, n)), tuple(a.shape[1:]))
                for n, a in arrays.items()]

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        return [Chunk(first_index, "npz", uri)]

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        arrays = _load_npz(chunk.uri)
        out = {}
        for col in columns:
            arr = arrays[col.name]
            if tuple(arr.shape[1:]) != col.shape:
                raise ShardInputError(f"{chunk.uri}: array {col.name!r} has shape "
                                      f"{arr.shape}; expected (rows, {col.shape})")
            out[col.name] = arr.astype(object if col.dtype == "string" else col.dtype)
        return out


def _load_npz(uri: str) -> Dict[str, np.ndarray]:
    try:
        with uris.open_file(uri) as f, np.load(io.BytesIO(f.read()), allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    except Exception as err:
        raise ShardInputError(f"{uri} is not a readable .npz file: {err}") from err


def _numpy_dtype(arr: np.ndarray, uri: str, name: str) -> str:
    if arr.dtype.kind == "f":
        return "float32"
    if arr.dtype.kind in "iub":
        return "int64"
    if arr.dtype.kind in "USO":
        return "string"
    raise ShardInputError(f"{uri}: array {name!r} has dtype {arr.dtype}; expected numbers "
                          "or strings")
