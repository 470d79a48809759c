"""merge_datasets: several Datasets from fanned-out shard_tfrecords tasks as one.

The shards stay where they are; the merged Dataset is a manifest that lists them by their
full URIs with their records, bytes and CRC32C (readers check their sizes as in any
Dataset; each part's shards are checked when merging too), with one schema whose label
vocabulary is the union of the parts' (labels are stored as values in the records, so
class indices follow the merged vocabulary).
"""

import dataclasses
from typing import Dict, List, Sequence

from tfkfp.components.common import uris
from tfkfp.components.common.dataset import Manifest
from tfkfp.components.common.schema import Schema, SchemaError


@dataclasses.dataclass(frozen=True)
class MergeResult:
    dataset: str
    schema: Schema
    records: Dict[str, int]
    num_shards: Dict[str, int]
    parts: int

    def metadata(self) -> Dict:
        return {"records": self.records, "num_shards": self.num_shards, "parts": self.parts,
                "schema": self.schema.summary()}


def merge_datasets(datasets: Sequence[str], dataset: str) -> MergeResult:
    """Write ``dataset`` with a schema and a manifest covering every input Dataset."""
    if not datasets:
        raise SchemaError("merge_datasets needs at least one Dataset to merge")
    manifests = [Manifest.load(d) for d in datasets]
    for manifest in manifests:  # a damaged part fails here, named, not in every reader later
        for split in manifest.splits:
            manifest.shard_files(split)
    schemas = [Schema.load(d) for d in datasets]
    schema = merged_schema(schemas, datasets)
    compressions = {m.compression for m in manifests}
    if len(compressions) > 1:
        raise SchemaError(f"the Datasets mix compressions {sorted(compressions)}; shard them "
                          "all with the same compression")
    splits: Dict[str, Dict] = {}
    for directory, manifest in zip(datasets, manifests):
        for split, body in manifest.splits.items():
            merged = splits.setdefault(split, {"records": 0, "bytes": 0, "shards": []})
            merged["records"] += body["records"]
            merged["bytes"] += body["bytes"]
            merged["shards"] += [{**s, "file": uris.resolve(directory, s["file"])}
                                 for s in body["shards"]]
    uris.makedirs(dataset)
    schema.save(dataset)
    Manifest(dataset, splits, compressions.pop(), tuple(datasets)).save()
    return MergeResult(dataset, schema, {s: b["records"] for s, b in splits.items()},
                       {s: len(b["shards"]) for s, b in splits.items()}, len(datasets))


def merged_schema(schemas: List[Schema], names: Sequence[str]) -> Schema:
    """The common schema; the columns must agree except for the label's vocabulary (the
    union) and the gap counts (the sum)."""
    first = schemas[0]
    for schema, name in zip(schemas[1:], names[1:]):
        if _shape_only(schema) != _shape_only(first):
            raise SchemaError(f"{name} has columns {schema.to_json()} but {names[0]} has "
                              f"{first.to_json()}; only Datasets of one table can be merged")
    columns = []
    for i, col in enumerate(first.columns):
        parts = [schema.columns[i] for schema in schemas]
        vocabulary = col.vocabulary
        if col.role == "label" and vocabulary is not None:
            vocabulary = tuple(sorted({v for c in parts for v in c.vocabulary or ()}))
        columns.append(dataclasses.replace(col, vocabulary=vocabulary,
                                           missing=sum(c.missing for c in parts)))
    return Schema(tuple(columns))


def _shape_only(schema: Schema) -> Schema:
    return Schema(tuple(dataclasses.replace(c, vocabulary=None, missing=0)
                        for c in schema.columns))
