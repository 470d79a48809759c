"""CSV and JSON Lines: line-aligned byte ranges parsed by pyarrow.

pyarrow does not say on which line a parse fails; ``diagnose`` finds it on the failure path.
"""

import csv
import io
from typing import Dict, List

import numpy as np

from tfkfp.components.common.platform import uris
from tfkfp.components.shard_tfrecords import diagnose
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import (
    ARROW_TYPES,
    Chunk,
    RawColumn,
    check_unique_names,
    decode_text,
    dtype_of_arrow,
    empty_dtype,
    list_type,
    read_range,
    set_column_type,
    to_numpy,
)

CHUNK_BYTES = 16 << 20
INFER_ROWS = 1000  # CSV column types come from the first rows unless column_types says


def line_chunks(uri: str, fmt: str, first_index: int, skip_header: bool) -> List[Chunk]:
    total = uris.size(uri)
    with uris.open_file(uri) as f:
        start = len(f.readline()) if skip_header else 0
        bounds = [start]
        while bounds[-1] + CHUNK_BYTES < total:
            f.seek(bounds[-1] + CHUNK_BYTES)
            f.readline()  # move to the start of the next whole line
            bounds.append(min(f.tell(), total))
    bounds.append(total)
    return [Chunk(first_index + i, fmt, uri, a, b)
            for i, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a or i == 0]


class _Lines:
    """A format read in line-aligned byte ranges, one row a line; ``HEADER``: whether the
    first line names the columns (and is skipped by the ranges)."""

    NAME: str
    HEADER: bool

    @classmethod
    def chunks(cls, uri: str, first_index: int) -> List[Chunk]:
        return line_chunks(uri, cls.NAME, first_index, skip_header=cls.HEADER)


def _arrays(table, columns: List[RawColumn], uri: str) -> Dict[str, np.ndarray]:
    """A parsed range's columns as the encoder's arrays."""
    return {c.name: to_numpy(table.column(c.name), c, uri) for c in columns}


class Csv(_Lines):
    NAME, HEADER = "csv", True

    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        import pyarrow.csv as pcsv

        sample = read_range(uri, 0, 1 << 20 if not cheap else 64 << 10)
        if not sample.strip():
            raise ShardInputError(f"{uri} is empty: expected a header line and data rows")
        header, _, body = sample.partition(b"\n")
        if not cheap and not body.strip():
            raise ShardInputError(f"{uri} has a header but no data rows")
        # names exactly as the file has them (spaces too), as pyarrow reads them below
        names = next(csv.reader([decode_text(header, uri).removesuffix("\r")]))
        check_unique_names(names, uri)
        if cheap:
            return [RawColumn(n, column_types.get(n, "string")) for n in names]
        body = b"\n".join(body.split(b"\n")[:INFER_ROWS]) + b"\n"
        try:
            table = pcsv.read_csv(io.BytesIO(header + b"\n" + body),
                                  convert_options=_csv_convert(column_types))
        except Exception as err:  # pyarrow raises several types
            raise diagnose.csv_error(uri, 0, len(sample), names, column_types,
                                     err) from err
        cols = [RawColumn(n, column_types.get(n) or _inferred(table.column(n), f"{uri}, "
                                                               f"column {n!r}"))
                for n in table.column_names]
        for col in cols:
            if col.dtype == "string" and col.name not in column_types:
                _check_not_mostly_numeric(uri, col.name, table.column(col.name).to_pylist())
        return cols

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        import pyarrow.csv as pcsv

        body = read_range(chunk.uri, chunk.start, chunk.end)
        if not body.strip():  # a header-only file among several
            return {c.name: np.zeros((0, *c.shape), dtype=empty_dtype(c)) for c in columns}
        names = [c.name for c in columns]
        types = {c.name: c.dtype for c in columns}
        try:
            table = pcsv.read_csv(
                io.BytesIO(body),
                read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
                convert_options=_csv_convert(types))
            return _arrays(table, columns, chunk.uri)
        except Exception as err:  # pyarrow raises several types
            raise diagnose.csv_error(chunk.uri, chunk.start, chunk.end, names, types,
                                     err) from err


def _inferred(values, where: str) -> str:
    """The column's dtype; whole numbers with blanks are float32, as int64 holds no gap."""
    dtype = dtype_of_arrow(values.type, where)[0]
    return "float32" if dtype == "int64" and values.null_count else dtype


def _check_not_mostly_numeric(uri: str, name: str, values: List[str]) -> None:
    """A text column whose values are mostly numbers has a typo, not a string type."""
    bad = [i for i, v in enumerate(values) if not diagnose.is_number(v)]
    if bad and len(bad) <= len(values) // 2:
        raise ShardInputError(
            f"{uri}, line {bad[0] + 2}, column {name!r}: found {values[bad[0]]!r}, expected "
            f"float32 (most values of the column are numbers; "
            f"{set_column_type(name, 'string')} if it is text)")


def _csv_convert(column_types: Dict[str, str]):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    return pcsv.ConvertOptions(
        column_types={n: pa.type_for_alias(ARROW_TYPES[t]) for n, t in column_types.items()},
        strings_can_be_null=False)


class Jsonl(_Lines):
    NAME, HEADER = "jsonl", False

    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        import pyarrow.json as pjson

        sample = read_range(uri, 0, 1 << 20)
        sample = sample[: sample.rfind(b"\n") + 1] or sample
        if not sample.strip():
            raise ShardInputError(f"{uri} is empty: expected one JSON object per line")
        try:
            table = pjson.read_json(io.BytesIO(sample))
        except Exception as err:
            raise diagnose.jsonl_error(uri, 0, len(sample), None, err) from err
        cols = []
        for name, arrow_type in zip(table.column_names, table.schema.types):
            dtype, shape = list_type(table.column(name), arrow_type, f"{uri}, field {name!r}")
            if dtype == "int64" and not shape and table.column(name).null_count:
                dtype = "float32"  # whole numbers with gaps, as in _inferred
            cols.append(RawColumn(name, column_types.get(name, dtype), shape))
        return cols

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        import pyarrow.json as pjson

        body = read_range(chunk.uri, chunk.start, chunk.end)
        try:
            table = pjson.read_json(io.BytesIO(body), read_options=pjson.ReadOptions(
                use_threads=False), parse_options=pjson.ParseOptions(
                explicit_schema=_jsonl_schema(columns), unexpected_field_behavior="error"))
            missing = [c.name for c in columns if c.name not in table.column_names]
            if missing:
                raise ShardInputError(f"{chunk.uri}: field {missing[0]!r} never appears")
            return _arrays(table, columns, chunk.uri)
        except Exception as err:
            raise diagnose.jsonl_error(chunk.uri, chunk.start, chunk.end, columns, err) from err


def _jsonl_schema(columns: List[RawColumn]):
    import pyarrow as pa

    def arrow(col: RawColumn):
        base = pa.type_for_alias(ARROW_TYPES[col.dtype])
        return pa.list_(base) if col.shape else base

    return pa.schema([(c.name, arrow(c)) for c in columns])
