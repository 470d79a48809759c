"""merge_datasets: several Datasets from fanned-out shard_tfrecords tasks as one.

The merged Dataset holds every part's shards itself (``<split>/part-NNN-<shard>``), listed in
its manifest with their records, bytes and CRC32C, and one schema whose label vocabulary is
the union of the parts' (labels are stored as values in the records, so class indices follow
the merged vocabulary). It is self-contained: on a Kubeflow backend each step's pod sees
only its own input artifacts, so a manifest pointing into the shard tasks' folders would
not be readable by train. Locally the shards are hard-linked (no bytes copied); on a
cluster the merge step uploads them once more, which doubles the Dataset's bytes in the
artifact store (the price of a Dataset any pod can read on any store). Each part's shards
are checked against its manifest before anything is written.
"""

import dataclasses
from typing import Dict, List, Sequence

from tfkfp.components.common.data.dataset import Manifest
from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.platform import uris


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
    uris.makedirs(dataset)
    for index, (directory, manifest) in enumerate(zip(datasets, manifests)):
        for split, body in manifest.splits.items():
            merged = splits.setdefault(split, {"records": 0, "bytes": 0, "shards": []})
            merged["records"] += body["records"]
            merged["bytes"] += body["bytes"]
            uris.makedirs(uris.join(dataset, split))
            for shard in body["shards"]:
                name = f"{split}/part-{index:03d}-{shard['file'].rsplit('/', 1)[-1]}"
                uris.link_or_copy(uris.resolve(directory, shard["file"]),
                                  uris.join(dataset, name))
                merged["shards"].append({**shard, "file": name})
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
    return dataclasses.replace(first, columns=tuple(columns))


def _shape_only(schema: Schema) -> Schema:
    """The columns and record layout, without what differs between parts of one table."""
    return dataclasses.replace(schema, columns=tuple(
        dataclasses.replace(c, vocabulary=None, missing=0) for c in schema.columns))
