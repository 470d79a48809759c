"""Prediction and error files in JSON Lines, CSV or TFRecord, formatted a batch at a time.

Rows are never formatted one by one in Python: JSON Lines are assembled with Arrow's
vectorised string kernels, CSV by Arrow's CSV writer, TFRecords by the vectorised Example
encoder. Every file is written under a hidden temporary name beside its target and renamed
into place when complete, so a reader sees a whole shard or none.

A classifier's prediction row holds the key columns, ``class`` (the label), ``class_id``,
``score`` (its probability) and, when top_k > 1, the k best classes and scores:
``top_classes`` and ``top_scores`` lists (JSON Lines, TFRecord) or ``class_1..k`` /
``score_1..k`` (CSV). A regressor's holds the key columns and ``value``. Where the label is
carried (a key column of role ``label``: the eval split), the row also says ``correct`` (1
when the top class is the label, else 0) or a regressor's ``residual`` (value - label), so
predictions can be read against the truth without a join. Rows predicted through an
endpoint end with ``endpoint`` and ``model_version`` (``extra``).
"""

import contextlib
import csv
import dataclasses
import io
import json
from typing import Dict, List

import numpy as np

from tfkfp.components.batch_predict.records import ErrorRow
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.platform import uris

ERROR_FIELDS = ("file", "record", "offset", "reason")


@dataclasses.dataclass
class Predictions:
    keys: Dict[str, np.ndarray]  # key column -> values, in output order
    key_columns: List[Column]
    top_ids: np.ndarray | None = None  # int64 [rows, k], best first (a classifier's)
    top_scores: np.ndarray | None = None  # float32 [rows, k]
    labels: List[str] = dataclasses.field(default_factory=list)
    top_k: int = 1
    values: np.ndarray | None = None  # float32 [rows] (a regressor's)
    extra: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # str columns, last

    @property
    def rows(self) -> int:
        return len(self.values if self.values is not None else self.top_ids)

    def class_names(self, column: int):
        import pyarrow as pa

        ids = np.ascontiguousarray(self.top_ids[:, column])
        return pa.array(self.labels, pa.string()).take(pa.array(ids))


def judged(preds: Predictions) -> Dict[str, tuple]:
    """``correct`` or ``residual`` against the carried label, as (dtype, values); {} when no
    key column is the label."""
    label = next((c for c in preds.key_columns if c.role == "label"), None)
    if label is None:
        return {}
    truth = preds.keys[label.name]
    if preds.values is not None:
        residual = np.asarray(preds.values, np.float64) - np.asarray(truth, np.float64)
        return {"residual": ("float32", residual.astype(np.float32))}
    names = np.asarray(preds.labels, dtype=object)[preds.top_ids[:, 0]]
    said = [v.decode() if isinstance(v, bytes) else str(v) for v in truth]
    return {"correct": ("int64", (names == np.asarray(said, dtype=object)).astype(np.int64))}


class ShardWriter:
    """Appends prediction batches to a temporary file; ``commit`` renames it into place."""

    def __init__(self, path: str, fmt: str):
        self.path, self.fmt, self.temp = path, fmt, uris.sibling_temp(path)
        self.header_done = False
        if fmt == "tfrecord":
            import tensorflow as tf

            self.file = tf.io.TFRecordWriter(self.temp)
        else:
            self.file = uris.open_file(self.temp, "wb")

    def write(self, preds: Predictions) -> None:
        if not preds.rows:
            return
        if self.fmt == "jsonl":
            self.file.write(jsonl_bytes(preds))
        elif self.fmt == "csv":
            self.file.write(csv_bytes(preds, header=not self.header_done))
            self.header_done = True
        else:
            from tfkfp.components.common.data.examples import split_rows

            for record in split_rows(example_rows(preds)):
                self.file.write(record)

    def commit(self, empty: Predictions) -> None:
        if self.fmt == "csv" and not self.header_done:
            self.file.write(csv_bytes(empty, header=True))
        self.file.close()
        uris.rename(self.temp, self.path)

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # already closed or broken: the temp file goes
            self.file.close()
        if uris.exists(self.temp):
            uris.remove(self.temp)


def _json_literals(values: np.ndarray, dtype: str):
    """Each value as a JSON literal (an Arrow string array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if dtype == "string":
        text = pa.array([v if isinstance(v, bytes) else str(v).encode() for v in values],
                        pa.binary()).cast(pa.string())
        return _quoted(text)
    array = pa.array(np.ascontiguousarray(values))
    text = pc.cast(array, pa.string())
    if dtype == "float32":
        text = pc.if_else(pc.is_finite(array), text, "null")
    return text


def _quoted(text):
    import pyarrow.compute as pc

    for old, new in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = pc.replace_substring(text, old, new)
    return pc.binary_join_element_wise('"', text, '"', "")


def jsonl_bytes(preds: Predictions) -> bytes:
    import pyarrow.compute as pc

    if not preds.rows:
        return b""
    pieces: list = []
    fields = [(c.name, _json_literals(preds.keys[c.name], c.dtype)) for c in preds.key_columns]
    if preds.values is not None:
        fields.append(("value", _json_literals(preds.values, "float32")))
    else:
        fields += _jsonl_classes(preds)
    fields += [(name, _json_literals(v, dtype)) for name, (dtype, v) in judged(preds).items()]
    fields += [(name, _json_literals(values, "string")) for name, values in preds.extra.items()]
    for i, (name, values) in enumerate(fields):
        pieces += [("{" if i == 0 else ", ") + json.dumps(name) + ": ", values]
    return _end_to_end(pc.binary_join_element_wise(*pieces, "}\n", ""))


def _end_to_end(lines) -> bytes:
    """A string array's values one after another: its data buffer between its first and
    last offsets (no join, no round trip through Python strings)."""
    import pyarrow as pa

    if lines.null_count:
        raise ValueError(f"{lines.null_count} JSON Lines rows came out null")
    width = np.int64 if pa.types.is_large_string(lines.type) else np.int32
    offsets = np.frombuffer(lines.buffers()[1], width, len(lines) + 1,
                            lines.offset * np.dtype(width).itemsize)
    return lines.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0])).to_pybytes()


def _jsonl_classes(preds: Predictions) -> list:
    import pyarrow as pa

    # each class name quoted once, then picked per row
    quoted = _quoted(pa.array(preds.labels, pa.string()))
    names = [quoted.take(pa.array(np.ascontiguousarray(preds.top_ids[:, j])))
             for j in range(preds.top_k)]
    fields = [("class", names[0]),
               ("class_id", _json_literals(preds.top_ids[:, 0], "int64")),
               ("score", _json_literals(preds.top_scores[:, 0], "float32"))]
    if preds.top_k > 1:
        fields += [("top_classes", _json_list(names)),
                   ("top_scores", _json_list([_json_literals(preds.top_scores[:, j], "float32")
                                              for j in range(preds.top_k)]))]
    return fields


def _json_list(columns):
    import pyarrow.compute as pc

    return pc.binary_join_element_wise("[", pc.binary_join_element_wise(*columns, ", "), "]", "")


def csv_bytes(preds: Predictions, header: bool) -> bytes:
    import pyarrow as pa

    columns = {}
    for c in preds.key_columns:
        values = preds.keys[c.name]
        columns[c.name] = (pa.array([v if isinstance(v, bytes) else str(v).encode()
                                     for v in values], pa.binary()).cast(pa.string())
                           if c.dtype == "string" else pa.array(np.ascontiguousarray(values)))
    if preds.values is not None:
        columns["value"] = pa.array(np.ascontiguousarray(preds.values, np.float32))
    else:
        columns["class"] = preds.class_names(0)
        columns["class_id"] = pa.array(np.ascontiguousarray(preds.top_ids[:, 0]))
        columns["score"] = pa.array(np.ascontiguousarray(preds.top_scores[:, 0]))
        for j in range(preds.top_k if preds.top_k > 1 else 0):
            columns[f"class_{j + 1}"] = preds.class_names(j)
            columns[f"score_{j + 1}"] = pa.array(np.ascontiguousarray(preds.top_scores[:, j]))
    columns.update((name, pa.array(v)) for name, (_, v) in judged(preds).items())
    columns.update((name, pa.array(values.tolist(), pa.string()))
                   for name, values in preds.extra.items())
    return _csv(columns, header)


def _csv(columns: Dict, header: bool) -> bytes:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    sink = io.BytesIO()
    pcsv.write_csv(pa.table(columns), sink, pcsv.WriteOptions(include_header=header))
    return sink.getvalue()


def example_rows(preds: Predictions):
    from tfkfp.components.common.data.examples import encode_examples

    columns = {c.name: (c.dtype, preds.keys[c.name]) for c in preds.key_columns}
    if preds.values is not None:
        columns["value"] = ("float32", np.asarray(preds.values, np.float32))
    else:
        names = np.asarray([s.encode() for s in preds.labels], dtype=object)
        columns["class"] = ("string", names[preds.top_ids[:, 0]])
        columns["class_id"] = ("int64", preds.top_ids[:, 0].astype(np.int64))
        columns["score"] = ("float32", preds.top_scores[:, 0].astype(np.float32))
        if preds.top_k > 1:
            columns["top_classes"] = ("string", names[preds.top_ids])
            columns["top_scores"] = ("float32", preds.top_scores.astype(np.float32))
    columns.update(judged(preds))
    columns.update((name, ("string", np.asarray([v.encode() for v in values], dtype=object)))
                   for name, values in preds.extra.items())
    return encode_examples(columns)


def write_errors(path: str, fmt: str, errors: List[ErrorRow]) -> None:
    """The errors file of one shard (empty when there were none), written atomically."""
    temp = uris.sibling_temp(path)
    rows = [dataclasses.asdict(e) for e in errors]
    if fmt == "tfrecord":
        import tensorflow as tf

        with tf.io.TFRecordWriter(temp) as writer:
            for row in rows:
                writer.write(_error_example(row))
    else:
        with uris.open_file(temp, "wb") as f:
            f.write(_error_text(rows, fmt).encode("utf-8"))
    uris.rename(temp, path)


def _error_text(rows: List[Dict], fmt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(row) + "\n" for row in rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=ERROR_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _error_example(row: Dict) -> bytes:
    import tensorflow as tf

    def feature(value):
        if isinstance(value, int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(value).encode()]))

    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in row.items()})).SerializeToString()
