"""The input formats the suite reads, one table: each format's name, the file extensions that
name it, and the steps that read it.

Sharding (``shard_tfrecords``) and batch prediction (``batch_predict``) take an
``input_format`` of ``auto`` or one of the names here that they read; ``auto`` tells the
format from the files' extensions (a trailing ``.gz`` ignored). The allowed values in their
refusals, their extension lookups and the command's ``--input-format`` choices are all read
from this table when asked, so adding a format is one entry here plus the reader of each step
that reads it (sharding's readers live in ``shard_tfrecords/formats/``, keyed by these names;
a test checks that every format sharding reads has one).
"""

import dataclasses
import os
from typing import Dict, Sequence, Tuple

SHARD = "shard_tfrecords"  # the steps that read input files, by component name
PREDICT = "batch_predict"
AUTO = "auto"  # tell the format from the file extensions


@dataclasses.dataclass(frozen=True)
class InputFormat:
    name: str
    extensions: Tuple[str, ...]  # lower case, with the dot; none: not told by extension
    read_by: Tuple[str, ...]  # the steps that read it (SHARD, PREDICT)
    summary: str  # one line for help texts and docs


# The order is the order of the allowed values in messages and choices.
FORMATS: Dict[str, InputFormat] = {fmt.name: fmt for fmt in (
    InputFormat("tfrecord", (".tfrecord", ".tfrecords"), (PREDICT,),
                "TFRecord files of tf.train.Example, read with a schema"),
    InputFormat("csv", (".csv",), (SHARD, PREDICT), "comma-separated values with a header"),
    InputFormat("jsonl", (".jsonl", ".json", ".ndjson"), (SHARD, PREDICT),
                "JSON Lines: one JSON object a line"),
    InputFormat("parquet", (".parquet", ".pq"), (SHARD,), "Parquet files, a row group a chunk"),
    InputFormat("npz", (".npz",), (SHARD,), "NumPy .npz archives, one array a column"),
    InputFormat("images", (), (SHARD,), "a folder of class subfolders of image files"),
)}


def names(step: str) -> Tuple[str, ...]:
    """The formats `step` reads, in the table's order (``auto`` not included)."""
    return tuple(f.name for f in FORMATS.values() if step in f.read_by)


def choices(step: str) -> Tuple[str, ...]:
    """What `step`'s input_format takes: ``auto``, then the formats it reads."""
    return (AUTO, *names(step))


def extensions(step: str) -> Dict[str, str]:
    """File extension -> format name, for the formats `step` reads."""
    return {ext: f.name for f in FORMATS.values() if step in f.read_by for ext in f.extensions}


def format_of(path: str, step: str) -> str | None:
    """The format `step` reads that `path`'s extension names (a trailing .gz ignored), or
    None when it names none."""
    ext = os.path.splitext(path.removesuffix(".gz"))[1].lower()
    return extensions(step).get(ext)


def formats_of(paths: Sequence[str], step: str) -> set:
    """The set of formats (None for an unknown extension) that the files' extensions name."""
    return {format_of(p, step) for p in paths}
