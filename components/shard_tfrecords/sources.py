"""Input formats for sharding: finding files, inferring columns, reading chunks.

A chunk is a unit of work for one worker thread: a line-aligned byte range of a CSV or
JSON Lines file, a Parquet row group, a whole .npz file, or a list of image files. This
module imports only NumPy, pyarrow and Pillow, never TensorFlow.
"""

import csv
import dataclasses
import io
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np

from tfkfp.components.common import uris
from tfkfp.components.shard_tfrecords import diagnose
from tfkfp.components.shard_tfrecords.errors import ShardInputError

FORMATS = ("csv", "jsonl", "parquet", "npz", "images")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
               ".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
IMAGE_COLUMN, IMAGE_LABEL, IMAGE_KEY = "image", "label", "filename"
CHUNK_BYTES = 16 << 20
INFER_ROWS = 1000  # CSV column types come from the first rows unless column_types says
IMAGES_PER_CHUNK = 2000


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


# --- finding the input ------------------------------------------------------------------


def resolve_files(input_uri: str, input_format: str = "auto") -> Tuple[str, List[str]]:
    """The input format and its files, sorted; a folder of class subfolders is 'images'."""
    if input_format not in ("auto", *FORMATS):
        raise ShardInputError(f"input_format {input_format!r} is not one of "
                              f"auto, {', '.join(FORMATS)}")
    if any(ch in input_uri for ch in "*?["):
        files = [f for f in uris.glob(input_uri) if not uris.isdir(f)]
        if not files:
            raise ShardInputError(f"no files match the pattern {input_uri}")
    elif not uris.exists(input_uri):
        raise ShardInputError(f"input path {input_uri} does not exist")
    elif uris.isdir(input_uri):
        if input_format in ("auto", "images") and _class_folders(input_uri):
            return "images", [input_uri]
        files = [uris.join(input_uri, n) for n in uris.listdir(input_uri)
                 if not n.startswith((".", "_")) and not uris.isdir(uris.join(input_uri, n))]
        if not files:
            raise ShardInputError(f"input folder {input_uri} holds no data files")
    else:
        files = [input_uri]
    fmt = input_format if input_format != "auto" else _format_of(files)
    return fmt, files


def _class_folders(folder: str) -> List[str]:
    return [n for n in uris.listdir(folder)
            if not n.startswith(".") and uris.isdir(uris.join(folder, n))]


def _format_of(files: Sequence[str]) -> str:
    found = {_EXTENSIONS.get(os.path.splitext(f.removesuffix(".gz"))[1].lower()) for f in files}
    if None in found or len(found) != 1:
        kinds = sorted({os.path.splitext(f)[1] or "(none)" for f in files})
        raise ShardInputError(
            f"cannot tell the input format from the file extensions {kinds}; expected one "
            f"kind among {sorted(_EXTENSIONS)}, or set input_format to one of {FORMATS}")
    return found.pop()


def select_group(files: List[str], group: int, num_groups: int) -> List[str]:
    """Every num_groups-th file starting at group: one task's share of a fan-out."""
    if num_groups < 1 or not 0 <= group < num_groups:
        raise ShardInputError(f"file group {group} of {num_groups} is not valid; expected "
                              f"num_file_groups >= 1 and 0 <= file_group < num_file_groups")
    chosen = files[group::num_groups]
    if not chosen:
        raise ShardInputError(f"file group {group} of {num_groups} is empty: the input has "
                              f"only {len(files)} files")
    return chosen


# --- columns ------------------------------------------------------------------------------


def infer_columns(fmt: str, files: List[str], column_types: Dict[str, str]) -> List[RawColumn]:
    """The columns of the input, checked to be the same in every file."""
    reader = _READERS[fmt]
    first = reader.columns(files[0], column_types)
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
    """The chunk's rows as ``{column: array}``; bad data raises ShardInputError."""
    return _READERS[chunk.fmt].read(chunk, columns)


# --- CSV and JSON Lines: line-aligned byte ranges ------------------------------------------


def _line_chunks(uri: str, fmt: str, first_index: int, skip_header: bool) -> List[Chunk]:
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


def _read_range(uri: str, start: int, end: int) -> bytes:
    with uris.open_file(uri) as f:
        f.seek(start)
        return f.read(end - start)


_ARROW_TYPES = {"float32": "float32", "int64": "int64", "string": "string"}


def _dtype_of_arrow(arrow_type, where: str) -> Tuple[str, Tuple[int, ...]]:
    import pyarrow as pa

    if pa.types.is_floating(arrow_type) or pa.types.is_null(arrow_type):
        return "float32", ()
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "int64", ()
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or \
            pa.types.is_binary(arrow_type):
        return "string", ()
    if pa.types.is_fixed_size_list(arrow_type):
        inner, shape = _dtype_of_arrow(arrow_type.value_type, where)
        return inner, (arrow_type.list_size, *shape)
    raise ShardInputError(f"{where}: type {arrow_type} is not supported; expected numbers, "
                          "strings or fixed-length lists of them")


def _to_numpy(array, col: RawColumn, where: str) -> np.ndarray:
    """An arrow column as a NumPy array of the column's dtype and shape."""
    import pyarrow as pa

    if array.null_count:
        row = next(i for i, v in enumerate(array.is_null().to_pylist()) if v)
        raise ShardInputError(f"{where}, row {row + 1}, column {col.name!r}: missing value; "
                              f"expected {col.dtype}")
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        return _lists_to_numpy(array, col, where)
    if col.dtype == "string":
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)
    return array.to_numpy(zero_copy_only=False).astype(np.float32 if col.dtype == "float32"
                                                        else np.int64)


def _lists_to_numpy(array, col: RawColumn, where: str) -> np.ndarray:
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


class _Csv:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        import pyarrow.csv as pcsv

        sample = _read_range(uri, 0, 1 << 20 if not cheap else 64 << 10)
        if not sample.strip():
            raise ShardInputError(f"{uri} is empty: expected a header line and data rows")
        header, _, body = sample.partition(b"\n")
        if not cheap and not body.strip():
            raise ShardInputError(f"{uri} has a header but no data rows")
        names = [n.strip() for n in next(csv.reader([header.decode("utf-8").strip("\r")]))]
        if cheap:
            return [RawColumn(n, column_types.get(n, "string")) for n in names]
        body = b"\n".join(body.split(b"\n")[:INFER_ROWS]) + b"\n"
        try:
            table = pcsv.read_csv(io.BytesIO(header + b"\n" + body),
                                  convert_options=_csv_convert(column_types))
        except Exception as err:  # noqa: BLE001 - pyarrow raises several types
            raise diagnose.csv_error(uri, 0, len(sample), names, column_types,
                                     err) from err
        cols = [RawColumn(n, column_types.get(n) or _dtype_of_arrow(t, f"{uri}, column {n!r}")[0])
                for n, t in zip(table.column_names, table.schema.types)]
        for col in cols:
            if col.dtype == "string" and col.name not in column_types:
                _check_not_mostly_numeric(uri, col.name, table.column(col.name).to_pylist())
        return cols

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        return _line_chunks(uri, "csv", first_index, skip_header=True)

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        import pyarrow.csv as pcsv

        body = _read_range(chunk.uri, chunk.start, chunk.end)
        names = [c.name for c in columns]
        types = {c.name: c.dtype for c in columns}
        try:
            table = pcsv.read_csv(
                io.BytesIO(body),
                read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
                convert_options=_csv_convert(types))
            return {c.name: _to_numpy(table.column(c.name), c, chunk.uri) for c in columns}
        except (ShardInputError, Exception) as err:  # noqa: BLE001
            raise diagnose.csv_error(chunk.uri, chunk.start, chunk.end, names, types,
                                     err) from err


def _check_not_mostly_numeric(uri: str, name: str, values: List[str]) -> None:
    """A text column whose values are mostly numbers has a typo, not a string type."""
    bad = [i for i, v in enumerate(values) if not _is_number(v)]
    if bad and len(bad) <= len(values) // 2:
        raise ShardInputError(
            f"{uri}, line {bad[0] + 2}, column {name!r}: found {values[bad[0]]!r}, expected "
            f"float32 (most values of the column are numbers; set column_types "
            f"{{{name!r}: 'string'}} if it is text)")


def _is_number(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        return False


def _csv_convert(column_types: Dict[str, str]):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    return pcsv.ConvertOptions(
        column_types={n: pa.type_for_alias(_ARROW_TYPES[t]) for n, t in column_types.items()},
        strings_can_be_null=False)


class _Jsonl:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        import pyarrow.json as pjson

        sample = _read_range(uri, 0, 1 << 20)
        sample = sample[: sample.rfind(b"\n") + 1] or sample
        if not sample.strip():
            raise ShardInputError(f"{uri} is empty: expected one JSON object per line")
        try:
            table = pjson.read_json(io.BytesIO(sample))
        except Exception as err:  # noqa: BLE001
            raise diagnose.jsonl_error(uri, 0, len(sample), None, err) from err
        cols = []
        for name, arrow_type in zip(table.column_names, table.schema.types):
            dtype, shape = _jsonl_type(table.column(name), arrow_type, f"{uri}, field {name!r}")
            cols.append(RawColumn(name, column_types.get(name, dtype), shape))
        return cols

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        return _line_chunks(uri, "jsonl", first_index, skip_header=False)

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        import pyarrow.json as pjson

        body = _read_range(chunk.uri, chunk.start, chunk.end)
        try:
            table = pjson.read_json(io.BytesIO(body), read_options=pjson.ReadOptions(
                use_threads=False), parse_options=pjson.ParseOptions(
                explicit_schema=_jsonl_schema(columns), unexpected_field_behavior="error"))
            missing = [c.name for c in columns if c.name not in table.column_names]
            if missing:
                raise ShardInputError(f"{chunk.uri}: field {missing[0]!r} never appears")
            return {c.name: _to_numpy(table.column(c.name), c, chunk.uri) for c in columns}
        except Exception as err:  # noqa: BLE001
            raise diagnose.jsonl_error(chunk.uri, chunk.start, chunk.end, columns, err) from err


def _jsonl_type(values, arrow_type, where: str) -> Tuple[str, Tuple[int, ...]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_list(arrow_type):
        lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False)
        inner, _ = _dtype_of_arrow(arrow_type.value_type, where)
        return inner, (int(lengths[0]) if len(lengths) else 0,)
    return _dtype_of_arrow(arrow_type, where)


def _jsonl_schema(columns: List[RawColumn]):
    import pyarrow as pa

    def arrow(col: RawColumn):
        base = pa.type_for_alias(_ARROW_TYPES[col.dtype])
        return pa.list_(base) if col.shape else base

    return pa.schema([(c.name, arrow(c)) for c in columns])


class _Parquet:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        schema = _parquet_file(uri).schema_arrow
        cols = []
        for field in schema:
            dtype, shape = _dtype_of_arrow(field.type, f"{uri}, column {field.name!r}") \
                if not _is_list(field.type) else _parquet_list(uri, field)
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
            return {c.name: np.zeros((0, *c.shape)) for c in columns}
        table = pf.read_row_group(chunk.start, columns=[c.name for c in columns])
        where = f"{chunk.uri}, row group {chunk.start}"
        return {c.name: _to_numpy(table.column(c.name), c, where) for c in columns}


def _is_list(arrow_type) -> bool:
    import pyarrow as pa

    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)


def _parquet_list(uri: str, field) -> Tuple[str, Tuple[int, ...]]:
    first = _parquet_file(uri).read_row_group(0, columns=[field.name]).column(0)
    return _jsonl_type(first, field.type, f"{uri}, column {field.name!r}")


def _parquet_file(uri: str):
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(uris.open_file(uri) if uris.is_remote(uri) else uri)
    except Exception as err:  # noqa: BLE001
        raise ShardInputError(f"{uri} is not a readable Parquet file: {err}") from err


class _Npz:
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
    except Exception as err:  # noqa: BLE001
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


class _Images:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        files = _image_files(uri)
        if not files:
            raise ShardInputError(f"image folder {uri} has class subfolders but no images "
                                  f"with extensions {IMAGE_EXTENSIONS}")
        first = files[0][0]
        height, width, channels = _image_info(first, _read_range(first, 0, uris.size(first)))
        return [RawColumn(IMAGE_KEY, "string"),
                RawColumn(IMAGE_COLUMN, "string", image_shape=(height, width, channels)),
                RawColumn(IMAGE_LABEL, "string")]

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        files = _image_files(uri)
        flat = [item for pair in files for item in pair]
        step = 2 * IMAGES_PER_CHUNK
        return [Chunk(first_index + i // step, "images", uri, files=tuple(flat[i:i + step]),
                      root=uri) for i in range(0, len(flat), step)]

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        paths, labels = chunk.files[0::2], chunk.files[1::2]
        blobs = []
        for path in paths:
            with uris.open_file(path) as f:
                blob = f.read()
            _image_info(path, blob)  # fails with the file name when it does not decode
            blobs.append(blob)
        names = [p[len(chunk.root):].lstrip("/") for p in paths]
        return {IMAGE_KEY: np.array(names, dtype=object),
                IMAGE_COLUMN: np.array(blobs, dtype=object),
                IMAGE_LABEL: np.array(labels, dtype=object)}


def _image_files(folder: str) -> List[Tuple[str, str]]:
    found = []
    for label in _class_folders(folder):
        sub = uris.join(folder, label)
        found += [(uris.join(sub, n), label) for n in uris.listdir(sub)
                  if n.lower().endswith(IMAGE_EXTENSIONS)]
    return found


def _image_info(path: str, blob: bytes) -> Tuple[int, int, int]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(blob)) as img:
            img.load()  # decodes the pixels: a truncated file fails here
            channels = {"L": 1, "P": 3, "RGB": 3, "RGBA": 4, "LA": 2}.get(img.mode, 3)
            return img.height, img.width, 1 if channels == 2 else channels
    except Exception as err:  # noqa: BLE001
        raise ShardInputError(f"{path} is not a readable image ({err}); expected PNG, JPEG, "
                              "BMP or GIF") from err


_READERS = {"csv": _Csv, "jsonl": _Jsonl, "parquet": _Parquet, "npz": _Npz, "images": _Images}
