"""CSV and JSON Lines input for prediction, read with a schema, line-exact on bad rows.

Lines are gathered ``batch_size`` at a time and parsed by pyarrow with the schema's types
(the fast path). A block that fails to parse, or parses with a missing value, is halved
down to its bad lines (``common.platform.halving``), which become errors naming the file, the
line number and its byte offset. CSV values may not hold line breaks (one row a line).
"""

import contextlib
import csv
import io
import json
import re
from typing import Callable, Dict, Iterator, List

import numpy as np

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.records import (
    Chunk,
    ErrorRow,
    concat_columns,
)
from tfkfp.components.common.data import missing
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.halving import split_failures

_ARROW = {"float32": "float32", "int64": "int64", "string": "string"}


def check_columns(path: str, fmt: str, columns: List[Column]) -> None:
    """Fail before any output when a CSV header lacks a column the model or keys need."""
    if fmt != "csv":
        return
    with uris.open_file(path) as f:
        header = f.readline().decode("utf-8").strip("\r\n")
    names = header_names(header)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PredictInputError(f"{path}: the header names column(s) {twice} more than once; "
                                "each column needs its own name")
    absent = [c.name for c in columns if c.name not in names]
    if absent:
        raise PredictInputError(f"{path}: the header has no column(s) {absent} that the model "
                                f"or the keys need; its columns are {names}")


def header_names(header: str) -> List[str]:
    """A CSV header's column names exactly as the file has them (spaces are part of a
    name, as shard_tfrecords keeps them)."""
    return next(csv.reader([header])) if header else []


def read_text(path: str, fmt: str, features: List[Column], keys: List[Column],
              batch_size: int) -> Iterator[Chunk]:
    columns = features + [k for k in keys if k.name not in {c.name for c in features}]
    with uris.open_file(path) as f:
        header = f.readline() if fmt == "csv" else b""
        names = header_names(header.decode("utf-8").strip("\r\n"))
        line, offset = (2, len(header)) if fmt == "csv" else (1, 0)
        while True:
            lines = [x for x in (f.readline() for _ in range(batch_size)) if x]
            if not lines:
                return
            yield _parse_block(path, fmt, names, lines, line, offset, columns, features, keys)
            line += len(lines)
            offset += sum(len(x) for x in lines)


def _parse_block(path: str, fmt: str, names: List[str], lines: List[bytes], first_line: int,
                 offset: int, columns: List[Column], features, keys) -> Chunk:
    blanks = {i for i, x in enumerate(lines) if not x.strip()}
    kept = [x for i, x in enumerate(lines) if i not in blanks]
    numbers = [first_line + i for i in range(len(lines)) if i not in blanks]
    starts = np.cumsum([0] + [len(x) for x in lines])[:-1] + offset
    starts = [int(s) for i, s in enumerate(starts) if i not in blanks]
    parse = _csv_block if fmt == "csv" else _jsonl_block

    def attempt(lo: int, hi: int):
        return parse(b"".join(kept[lo:hi]), names, columns)

    good, bad = split_failures(attempt, len(kept))
    errors = [ErrorRow(path, numbers[i], starts[i], f"line does not parse with the schema: "
                       f"{_reason(err, names)}") for i, err in bad]
    if not good:
        return Chunk({}, {}, np.zeros(0, np.int64), errors)
    values = concat_columns([g[2] for g in good], [c.name for c in columns])
    records = np.asarray([numbers[i] for lo, hi, _ in good for i in range(lo, hi)], np.int64)
    return Chunk({c.name: values[c.name] for c in features},
                 {k.name: values[k.name] for k in keys}, records, errors)


def _reason(err: BaseException, names: List[str]) -> str:
    """The parser's message, its CSV column number (from 0) replaced by the column's name."""
    text = " ".join(str(err).split()) or type(err).__name__

    def named(found: re.Match) -> str:
        at = int(found[1])
        return f"column {names[at]!r}:" if at < len(names) else found[0]

    return re.sub(r"In CSV column #(\d+): Row #\d+:", named, text)


def _csv_block(body: bytes, names: List[str], columns: List[Column]) -> Dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    table = pcsv.read_csv(
        io.BytesIO(body),
        read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
        convert_options=pcsv.ConvertOptions(
            column_types={c.name: pa.type_for_alias(_ARROW[c.dtype]) for c in columns},
            include_columns=[c.name for c in columns], strings_can_be_null=False))
    values = {c.name: _to_numpy(table.column(c.name), c) for c in columns}
    _check_finite(values, columns, lambda name, _: next(csv.reader(
        [body.decode("utf-8").strip("\r\n")]))[names.index(name)].strip())
    return values


def _jsonl_block(body: bytes, names: List[str], columns: List[Column]) -> Dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.json as pjson

    def arrow_type(col: Column):
        base = pa.type_for_alias(_ARROW[col.dtype])
        return pa.list_(base) if col.shape else base

    table = pjson.read_json(io.BytesIO(body), read_options=pjson.ReadOptions(use_threads=False),
                            parse_options=pjson.ParseOptions(
                                explicit_schema=pa.schema([(c.name, arrow_type(c))
                                                           for c in columns]),
                                unexpected_field_behavior="ignore"))
    missing = [c.name for c in columns if c.name not in table.column_names]
    if missing:
        raise ValueError(f"field {missing[0]!r} is missing; expected {missing[0]!r} of type "
                         f"{_describe(columns, missing[0])}")
    values = {c.name: _to_numpy(table.column(c.name), c) for c in columns}
    _check_finite(values, columns, lambda name, at: _sent(json.loads(body)[name], at))
    return values


def _sent(value, at: int):
    return value[at] if isinstance(value, list) else value


def _check_finite(values: Dict[str, np.ndarray], columns: List[Column],
                  as_written: Callable[[str, int], object]) -> None:
    """``inf``, or a number past float32's range (pyarrow reads it as inf), fails the block,
    which is halved down to its line (common.data.missing's rule); for one line the message
    quotes the value as ``as_written(column, index)`` finds it in the line."""
    for col in columns:
        hit = missing.first_infinite(values[col.name]) if col.dtype == "float32" else None
        if hit is None:
            continue
        found = values[col.name].reshape(len(values[col.name]), -1)[hit]
        with contextlib.suppress(ValueError, IndexError, KeyError, TypeError, StopIteration):
            found = as_written(col.name, hit[1]) if len(values[col.name]) == 1 else found
        raise ValueError(f"column {col.name!r}: {missing.non_finite_problem(found)}")


def _describe(columns: List[Column], name: str) -> str:
    col = next(c for c in columns if c.name == name)
    return col.dtype + (str(list(col.shape)) if col.shape else "")


def _to_numpy(array, col: Column) -> np.ndarray:
    import pyarrow.compute as pc

    array = array.combine_chunks()
    if array.null_count:  # a gap: NaN or "", filled inside the model (common.data.missing)
        if col.shape or not missing.can_hold_gaps(col.dtype):
            raise ValueError(f"column {col.name!r}: missing value; expected "
                             f"{_describe([col], col.name)}, which cannot hold a gap")
        array = missing.fill_nulls(array, col.dtype)
    if col.shape:
        lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
        width = int(np.prod(col.shape))
        if (lengths != width).any():
            found = int(lengths[lengths != width][0])
            raise ValueError(f"column {col.name!r}: found a list of {found} values, expected "
                             f"{width}")
        array = pc.list_flatten(array)
    if col.dtype == "string":
        flat = np.asarray([v.encode() for v in array.to_pylist()], dtype=object)
    else:
        flat = array.to_numpy(zero_copy_only=False).astype(col.dtype)
    return flat.reshape((-1, *col.shape))
