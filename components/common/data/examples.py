"""Vectorised ``tf.train.Example`` serialisation with NumPy.

Building Examples one proto at a time in Python runs at ~50k records/s and would cap
sharding. The wire format of an Example whose columns have fixed shapes is regular, so
whole batches can be encoded with array operations instead. The output is byte-identical
to ``tf.train.Example.SerializeToString(deterministic=True)`` (map keys in sorted order);
tests hold it to that. Only NumPy is imported.

Wire format (protobuf): Example{1: Features{1: map<string, Feature>}},
Feature{1: BytesList{1: repeated bytes}, 2: FloatList{1: packed float},
3: Int64List{1: packed varint}}; a map entry is {1: key, 2: value}.
"""

from typing import Dict, List, Sequence, Tuple

import numpy as np

_LEN = 2  # wire type of length-delimited fields
_BYTES_LIST, _FLOAT_LIST, _INT64_LIST = 1, 2, 3


class Rows:
    """A batch of byte strings, one per row: a fixed-width matrix or ragged data+lengths."""

    def __init__(self, data: np.ndarray, lengths: np.ndarray = None):
        if lengths is None:  # fixed width: data is (rows, width) uint8
            self.matrix, self.data, self.lengths = data, None, None
        else:
            self.matrix, self.data, self.lengths = None, data, lengths.astype(np.int64)

    @property
    def count(self) -> int:
        return len(self.matrix) if self.matrix is not None else len(self.lengths)

    def row_lengths(self) -> np.ndarray:
        if self.matrix is not None:
            return np.full(len(self.matrix), self.matrix.shape[1], dtype=np.int64)
        return self.lengths

    def flat(self) -> Tuple[np.ndarray, np.ndarray]:
        if self.matrix is not None:
            return self.matrix.reshape(-1), self.row_lengths()
        return self.data, self.lengths

    def offsets(self) -> np.ndarray:
        """Start of each row in ``flat()[0]``, plus the total length at the end."""
        out = np.zeros(self.count + 1, dtype=np.int64)
        np.cumsum(self.row_lengths(), out=out[1:])
        return out


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    rest = values.astype(np.uint64) >> np.uint64(7)
    sizes = np.ones(values.shape, dtype=np.int64)
    while rest.any():
        sizes += rest > 0
        rest >>= np.uint64(7)
    return sizes


def _varints(values: np.ndarray) -> Rows:
    """Each value of a 1-D array as one varint row (negative int64 take 10 bytes)."""
    values = values.astype(np.uint64)
    sizes = _varint_sizes(values)
    width = int(sizes.max(initial=1))
    grid = np.empty((len(values), width), dtype=np.uint8)
    for k in range(width):
        more = (sizes - 1 > k).astype(np.uint64) << np.uint64(7)
        grid[:, k] = ((values >> np.uint64(7 * k)) & np.uint64(0x7F)) | more
    if (sizes == width).all():
        return Rows(grid)
    return Rows(grid[np.arange(width) < sizes[:, None]], sizes)


def _constant(prefix: bytes, count: int) -> Rows:
    row = np.frombuffer(prefix, dtype=np.uint8)
    return Rows(np.broadcast_to(row, (count, len(row))))


def concat(parts: List[Rows]) -> Rows:
    """Row i of the result is row i of each part, joined in order; each byte moves once."""
    if all(p.matrix is not None for p in parts):
        return Rows(np.concatenate([p.matrix for p in parts], axis=1))
    lengths = sum(p.row_lengths() for p in parts)
    total = int(lengths.sum())
    index = np.int32 if total < 2**31 else np.int64
    dest = np.zeros(len(lengths), dtype=index)
    np.cumsum(lengths[:-1], out=dest[1:])
    out = np.empty(total, dtype=np.uint8)
    for part in parts:
        if part.matrix is not None:
            width = part.matrix.shape[1]
            out[dest[:, None] + np.arange(width, dtype=index)] = part.matrix
            dest += width
        else:
            shift = dest - part.offsets()[:-1].astype(index)
            out[np.repeat(shift, part.lengths) + np.arange(len(part.data), dtype=index)] = (
                part.data)
            dest += part.lengths.astype(index)
    return Rows(out, lengths)


def _framed(field: int, pieces: List[Rows], length: np.ndarray) -> Tuple[List[Rows], np.ndarray]:
    """Prefix pieces (whose rows total ``length`` bytes) with ``tag, varint(length)``."""
    count = len(length)
    header = [_constant(bytes([(field << 3) | _LEN]), count), _varints(length)]
    return header + pieces, 1 + _varint_sizes(length) + length


def _payload(dtype: str, values: np.ndarray) -> Tuple[int, List[Rows], np.ndarray]:
    """The list field number, the pieces of its packed or repeated values, and their length."""
    rows = len(values)
    if dtype == "float32":
        flat = np.ascontiguousarray(values, dtype="<f4").reshape(rows, -1)
        return _FLOAT_LIST, [Rows(flat.view(np.uint8))], np.full(rows, flat.shape[1] * 4)
    if dtype == "int64":
        flat = np.asarray(values, dtype=np.int64).reshape(rows, -1)
        encoded = _varints(flat.reshape(-1))
        if encoded.matrix is not None:
            payload = Rows(encoded.matrix.reshape(rows, -1))
        else:
            payload = Rows(encoded.data, encoded.lengths.reshape(rows, -1).sum(axis=1))
        return _INT64_LIST, [payload], payload.row_lengths()
    if dtype == "string":
        flat = values.reshape(rows, -1)
        items = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat.ravel()]
        sizes = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        data = np.frombuffer(b"".join(items), dtype=np.uint8)
        pieces, each = _framed(1, [Rows(data, sizes)], sizes)  # repeated bytes, not packed
        joined = concat(pieces)
        data, _ = joined.flat()
        return _BYTES_LIST, [Rows(data, each.reshape(rows, -1).sum(axis=1))], None
    raise ValueError(f"cannot encode dtype {dtype!r}; expected float32, int64 or string")


def _map_entry(name: str, dtype: str, values: np.ndarray) -> Tuple[List[Rows], np.ndarray]:
    rows = len(values)
    kind, pieces, length = _payload(dtype, values)
    if length is None:  # repeated bytes: pieces are already whole fields
        length = pieces[0].row_lengths()
    elif int(np.prod(values.shape[1:], dtype=np.int64)) == 0:
        pieces, length = [], np.zeros(rows, dtype=np.int64)  # empty list: no field at all
    else:
        pieces, length = _framed(1, pieces, length)  # the packed field
    pieces, length = _framed(kind, pieces, length)  # Feature{kind: list}
    key = name.encode("utf-8")
    key_field = _constant(bytes([(1 << 3) | _LEN]) + _varint(len(key)) + key, rows)
    pieces, length = _framed(2, pieces, length)  # entry value
    return _framed(1, [key_field, *pieces], length + key_field.matrix.shape[1])


def encode_examples(columns: Dict[str, Tuple[str, np.ndarray]]) -> Rows:
    """Serialise one Example per row from ``{name: (dtype, values)}``.

    ``values`` has the rows on its first axis; the remaining axes are the per-example shape
    (flattened, row-major, as ``tf.io.parse_example`` reshapes them back). ``string``
    values are bytes or str objects.
    """
    if not columns:
        raise ValueError("cannot encode Examples with no columns")
    rows = len(next(iter(columns.values()))[1])
    pieces: List[Rows] = []
    length = np.zeros(rows, dtype=np.int64)
    for name in sorted(columns, key=lambda n: n.encode("utf-8")):
        entry, entry_length = _map_entry(name, *columns[name])
        pieces += entry
        length += entry_length
    pieces, _ = _framed(1, pieces, length)  # Example{features}
    return concat(pieces)


def encode_blocks(columns: Dict[str, Tuple[str, np.ndarray]], block_rows: int
                  ) -> Tuple[Rows, np.ndarray]:
    """Serialise one Example per ``block_rows`` consecutive rows (the last block holds the
    rest): each feature lists its rows' values one row after another. Returns the records
    and the rows each holds."""
    rows = len(next(iter(columns.values()))[1])
    full, rest = divmod(rows, block_rows)
    parts, counts = [], []
    if full:
        parts.append(encode_examples({
            name: (dtype, _rows_of(values[:full * block_rows], full))
            for name, (dtype, values) in columns.items()}))
        counts.append(np.full(full, block_rows, dtype=np.int64))
    if rest:
        parts.append(encode_examples({
            name: (dtype, _rows_of(values[full * block_rows:], 1))
            for name, (dtype, values) in columns.items()}))
        counts.append(np.array([rest], dtype=np.int64))
    if len(parts) == 1:
        return parts[0], counts[0]
    flats = [part.flat() for part in parts]
    return (Rows(np.concatenate([data for data, _ in flats]),
                 np.concatenate([lengths for _, lengths in flats])), np.concatenate(counts))


def _rows_of(values: np.ndarray, count: int) -> np.ndarray:
    """``values`` regrouped as ``count`` rows (each holds a run of the original rows)."""
    return values.reshape(count, values.size // count if count else 0)


def pack_columns(columns: Dict[str, Tuple[str, np.ndarray]], groups: Sequence
                 ) -> Dict[str, Tuple[str, np.ndarray]]:
    """``columns`` with each packed group's scalar columns stacked into one ``(rows, n)``
    column under the group's feature name (see ``common.data.packing.PackedGroup``).

    Groups list their columns in order; a gap (NaN) stays a NaN inside the packed list.
    """
    out = dict(columns)
    for group in groups:
        missing = [n for n in group.columns if n not in out]
        if missing:
            raise ValueError(f"packed group {group.feature!r} lists columns {missing} that "
                             f"are not among {sorted(columns)}")
        parts = [out.pop(name) for name in group.columns]
        wrong = [n for n, (dtype, _) in zip(group.columns, parts) if dtype != group.dtype]
        if wrong:
            raise ValueError(f"packed group {group.feature!r} holds {group.dtype}; columns "
                             f"{wrong} are not {group.dtype}")
        values = np.stack([np.asarray(v, dtype=group.dtype).reshape(len(v))
                           for _, v in parts], axis=1)
        out[group.feature] = (group.dtype, values)
    return out


def split_rows(rows: Rows) -> List[bytes]:
    """The rows as separate ``bytes`` objects (for writers that take one record a call)."""
    data, _ = rows.flat()
    blob = data.tobytes()
    offsets = rows.offsets().tolist()
    return [blob[offsets[i]:offsets[i + 1]] for i in range(rows.count)]
