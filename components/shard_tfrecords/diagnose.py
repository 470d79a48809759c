"""Turn a fast reader's terse failure into an error naming the line, column and value.

pyarrow parses CSV and JSON Lines fast but does not say on which line it failed. When it
fails, the chunk is scanned again with the standard library to find the first bad line;
this costs time only on the failure path.
"""

import csv
import io
import json
import math
from typing import Dict, List

from tfkfp.components.common.data.missing import FLOAT32_MAX, can_hold_gaps, non_finite_problem
from tfkfp.components.common.platform import uris
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import (
    decode_text,
    first_line_number,
    missing_problem,
    set_column_type,
)

_PARSERS = {"float32": float, "int64": int}


def csv_error(uri: str, start: int, end: int, names: List[str], types: Dict[str, str],
              err: Exception) -> ShardInputError:
    if isinstance(err, ShardInputError) and "line" in str(err):
        return err
    with uris.open_file(uri) as f:
        f.seek(start)
        text = decode_text(f.read(end - start), uri, start)  # binary: named by line
    line_no = first_line_number(uri, start)
    if start == 0:  # the chunk holds the header line too
        line_no += 1
        text = text.partition("\n")[2]
    for offset, row in enumerate(csv.reader(io.StringIO(text))):
        problem = _csv_row_problem(row, names, types)
        if problem:
            return ShardInputError(f"{uri}, line {line_no + offset}{problem}")
    return ShardInputError(f"{uri}: could not read rows from byte {start} to {end}: {err}")


def _csv_row_problem(row: List[str], names: List[str], types: Dict[str, str]) -> str:
    if not row:
        return ""
    if len(row) != len(names):
        return (f": ragged row: found {len(row)} fields, expected {len(names)} "
                f"({', '.join(names)})")
    for name, value in zip(names, row):
        problem = _value_problem(name, value, types.get(name))
        if problem:
            return f", column {name!r}: {problem}"
    return ""


def _value_problem(name: str, value: str, dtype: str) -> str:
    if dtype not in _PARSERS:
        return ""
    if value.strip() == "":
        return "" if can_hold_gaps(dtype) else missing_problem(name, dtype)
    try:
        _PARSERS[dtype](value)
    except ValueError:
        hint = f" (a fractional number: {set_column_type(name, 'float32')})" \
            if dtype == "int64" and is_number(value) else ""
        return f"found {value!r}, expected {dtype}{hint}"
    return ""


def is_number(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        return False


def jsonl_error(uri: str, start: int, end: int, columns: list, err: Exception) -> ShardInputError:
    if isinstance(err, ShardInputError) and "line" in str(err):
        return err
    with uris.open_file(uri) as f:
        f.seek(start)
        lines = decode_text(f.read(end - start), uri, start).splitlines()
    first = first_line_number(uri, start)
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        problem = _json_line_problem(line, columns)
        if problem:
            return ShardInputError(f"{uri}, line {first + offset}{problem}")
    return ShardInputError(f"{uri}: could not read records from byte {start} to {end}: {err}")


def _json_line_problem(line: str, columns: list) -> str:
    try:
        record = json.loads(line)
    except ValueError as err:
        return f": not valid JSON ({err})"
    if not isinstance(record, dict):
        return f": found a JSON {type(record).__name__}, expected an object"
    if columns is None:  # the columns are not known yet: only the syntax can be checked,
        return _past_double(record)  # and numbers pyarrow cannot parse (Python reads inf)
    names = [c.name for c in columns]
    extra = sorted(set(record) - set(names))
    if extra:
        return f": unexpected field {extra[0]!r}; expected only {names}"
    for col in columns:
        if col.name not in record:
            return f", field {col.name!r}: missing value; expected {col.dtype}"
        if record[col.name] is None:
            if col.shape or not can_hold_gaps(col.dtype):
                return f", field {col.name!r}: {missing_problem(col.name, col.dtype)}"
            continue
        problem = _json_value_problem(record[col.name], col)
        if problem:
            return f", field {col.name!r}: {problem}"
    return ""


def _past_double(record: dict) -> str:
    for name, value in record.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, float) and math.isinf(item):
                return f", field {name!r}: {non_finite_problem(item)}"
    return ""


def _json_value_problem(value, col) -> str:
    values = value if isinstance(value, list) else [value]
    if col.shape and (not isinstance(value, list) or len(value) != col.shape[0]):
        return f"found {value!r}, expected a list of {col.shape[0]} {col.dtype} values"
    for item in values:
        ok = isinstance(item, str) if col.dtype == "string" else (
            isinstance(item, (int, float)) and not isinstance(item, bool)
            and (col.dtype == "float32" or float(item).is_integer()))
        if not ok:
            return f"found {item!r}, expected {col.dtype}"
        if col.dtype == "float32" and abs(item) > FLOAT32_MAX:  # 1e400: past a double too
            return non_finite_problem(item)
    return ""
