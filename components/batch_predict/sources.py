"""Where batch prediction's input comes from, and whether it fits the model.

The input is a Dataset directory written by shard_tfrecords (shards listed in its
manifest, ``schema.json`` beside them), a TFRecord file pattern with a schema, or CSV /
JSON Lines files read with a schema. Everything here runs before any output is written,
so a model/data mismatch fails without leaving files behind.
"""

import dataclasses
import os
from typing import Dict, List, Sequence, Tuple

from tfkfp.components.batch_predict.errors import PredictInputError, model_errors
from tfkfp.components.common.data import formats
from tfkfp.components.common.data.dataset import (
    MANIFEST_FILE,
    Manifest,
    check_sizes,
    compression_of_files,
    is_dataset,
    listing_of,
    tf_compression,
)
from tfkfp.components.common.data.schema import SCHEMA_FILE, Column, Schema, SchemaError
from tfkfp.components.common.model.matching import feature_columns
from tfkfp.components.common.model.predictor import Predictor
from tfkfp.components.common.platform import uris

PREDICTION_COLUMNS = ("class", "class_id", "score", "top_classes", "top_scores", "value",
                      "endpoint", "model_version")  # the last two: endpoint mode's
INPUT_FORMATS = formats.choices(formats.PREDICT)  # auto, then the formats it reads


@dataclasses.dataclass(frozen=True)
class InputPlan:
    fmt: str  # tfrecord | csv | jsonl
    files: Tuple[str, ...]  # every input file, in order: shard k of the output is file k
    compression: str  # 'GZIP' or '' (TFRecords)
    schema: Schema  # the columns the data has
    expected: Tuple[int | None, ...]  # records per file where a manifest says
    sizes: Tuple[int | None, ...] = ()  # bytes per file where a manifest says
    manifest: str = ""  # the manifest.json that lists the files, if one does
    # the files are a Dataset's shards read with its own schema, so the schema says their
    # record layout; a model's, a given schema or one copied beside other files may not
    layout_known: bool = False


def resolve_input(data_uri: str, split: str = "all", schema_uri: str = "",
                  input_format: str = "auto", model_schema: Schema | None = None) -> InputPlan:
    """Find the input files, their format and the data's schema."""
    if input_format not in formats.choices(formats.PREDICT):
        raise PredictInputError(f"input_format {input_format!r} is not one of "
                                f"{formats.choices(formats.PREDICT)}")
    if is_dataset(data_uri):
        return _dataset_dir(data_uri, split, schema_uri)
    files = _files(data_uri)
    fmt = input_format if input_format != "auto" else _format_of(files)
    schema, beside = _schema(schema_uri, model_schema, data_uri, fmt)
    if fmt == "tfrecord":
        try:
            compression = tf_compression(compression_of_files(files, data_uri))
        except SchemaError as err:
            raise PredictInputError(str(err)) from None
        # shards of a Dataset named by a pattern: checked by its manifest, as the folder is
        listed = _as_input_error(listing_of, files, not schema_uri)
        return InputPlan(fmt, tuple(files), compression, schema, listed.records, listed.sizes,
                         listed.manifest, layout_known=beside and bool(listed.manifest))
    return InputPlan(fmt, tuple(files), "", schema, (None,) * len(files))


def _dataset_dir(data_uri: str, split: str, schema_uri: str) -> InputPlan:
    manifest = Manifest.load(data_uri)
    if split != "all" and split not in manifest.splits:
        raise PredictInputError(f"{data_uri} has no split {split!r}; it has "
                                f"{list(manifest.splits)} (or use 'all')")
    splits = list(manifest.splits) if split == "all" else [split]
    files = [f for name in splits for f in manifest.shard_files(name, check=False)]
    expected = [n for name in splits for n in manifest.shard_records(name)]
    sizes = [n for name in splits for n in manifest.shard_sizes(name)]
    if not schema_uri:
        _as_input_error(manifest.check_schema)
    schema = Schema.load(schema_uri or data_uri)
    return InputPlan("tfrecord", tuple(files), tf_compression(manifest.compression), schema,
                     tuple(expected), tuple(sizes), uris.join(data_uri, MANIFEST_FILE),
                     layout_known=not schema_uri)


def check_shards(plan: InputPlan, chosen: Sequence[int]) -> None:
    """One stat per chosen shard against the manifest's bytes, before anything is read: a
    shard truncated (even on a record boundary), replaced or removed fails the run, named."""
    if plan.manifest:
        _as_input_error(check_sizes, [plan.files[i] for i in chosen],
                        [plan.sizes[i] for i in chosen], plan.manifest,
                        [plan.expected[i] for i in chosen])


def _as_input_error(check, *args):
    try:
        return check(*args)
    except SchemaError as err:
        raise PredictInputError(str(err)) from None


def _files(data_uri: str) -> List[str]:
    if any(ch in data_uri for ch in "*?["):
        files = [f for f in uris.glob(data_uri) if not uris.isdir(f)]
    elif uris.isdir(data_uri):
        files = [uris.join(data_uri, n) for n in uris.listdir(data_uri)
                 if not n.startswith((".", "_")) and n != SCHEMA_FILE
                 and not uris.isdir(uris.join(data_uri, n))]
    elif uris.exists(data_uri):
        files = [data_uri]
    else:
        raise PredictInputError(f"input {data_uri} does not exist")
    if not files:
        raise PredictInputError(f"no input files found at {data_uri}")
    return files


def _format_of(files: Sequence[str]) -> str:
    found = formats.formats_of(files, formats.PREDICT)
    if None in found or len(found) != 1:
        kinds = sorted({os.path.splitext(f)[1] or "(none)" for f in files})
        raise PredictInputError(f"cannot tell the input format from the extensions {kinds}; "
                                "expected one of "
                                f"{sorted(formats.extensions(formats.PREDICT))} or set "
                                "input_format")
    return found.pop()


def _schema(schema_uri: str, model_schema: Schema | None, data_uri: str, fmt: str
            ) -> Tuple[Schema, bool]:
    """The data's schema, and whether it was found beside the TFRecord files."""
    if schema_uri:
        return Schema.load(schema_uri), False
    if fmt == "tfrecord":
        head = data_uri.rstrip("/").rpartition("/")[0] if not uris.isdir(data_uri) else data_uri
        for folder in (head, head.rpartition("/")[0]):
            if folder and uris.exists(uris.join(folder, SCHEMA_FILE)):
                return Schema.load(folder), True
    if model_schema is not None:
        return model_schema, False
    raise PredictInputError(f"no schema for {data_uri}: pass schema_uri (a schema.json), or use "
                            "a model that carries its schema")


def plan_columns(predictor: Predictor, schema: Schema, keys: Sequence[str] | None,
                 where: str) -> Tuple[List[Column], List[Column]]:
    """The feature columns to parse for the model and the key columns to carry.

    Raises PredictInputError naming the input when the data lacks a model input or holds it
    with another type or shape (common.model.matching: the model/data mismatch check), or a
    key column cannot be carried.
    """
    with model_errors():
        features = feature_columns(predictor, schema, where)
    names = [c.name for c in schema.keys] if keys is None else list(keys)
    return features, [_key_column(schema, n, where) for n in names]


def _key_column(schema: Schema, name: str, where: str) -> Column:
    if name in PREDICTION_COLUMNS:
        raise PredictInputError(f"key column {name!r} would clash with the prediction column "
                                f"of that name; the prediction columns are {PREDICTION_COLUMNS}")
    if name in schema.names:
        col = schema.column(name)
        if col.shape or col.encoding:
            raise PredictInputError(f"key column {name!r} is {col.dtype}{list(col.shape)}"
                                    f"{' ' + col.encoding if col.encoding else ''}; keys must "
                                    "be scalar int64, float32 or string columns")
        return col
    raise PredictInputError(f"key column {name!r} is not in the data {where}; its columns "
                            f"are {schema.names}")


def column_types(columns: Sequence[Column]) -> Dict[str, str]:
    return {c.name: c.dtype for c in columns}
