"""merge_datasets: several Datasets from fanned-out shard_tfrecords tasks as one.

The merged manifest lists every part's shards with their records, bytes and CRC32C, and one
schema whose label vocabulary is the union of the parts' (labels are stored as values in the
records, so class indices follow the merged vocabulary).

Shards a part keeps in a data root (listed by URI, see common.data.data_root) stay where they
are: the merged manifest lists the same URIs, and nothing is copied. Shards inside a part's
own folder are copied in (``<split>/part-NNN-<shard>``): on a Kubeflow backend each step's
pod sees only its own input artifacts, so a manifest pointing into the shard tasks' folders
would not be readable by train. Locally they are hard-linked (no bytes copied). Each part's
shards are checked against its manifest before anything is written.
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


def merge_datasets(datasets: Sequence[str], dataset: str,
                   names: Sequence[str] = ()) -> MergeResult:
    """Write ``dataset`` with a schema and a manifest covering every input Dataset
    (``names``: the parts as the manifest's ``merged_from`` records them, e.g. their
    artifact URIs rather than the paths this pod read them at)."""
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
            for shard in body["shards"]:
                merged["shards"].append(_entry(directory, dataset, split, index, shard))
    schema.save(dataset)
    Manifest(dataset, splits, compressions.pop(), tuple(names or datasets)).save()
    return MergeResult(dataset, schema, {s: b["records"] for s, b in splits.items()},
                       {s: len(b["shards"]) for s, b in splits.items()}, len(datasets))


def _entry(part: str, dataset: str, split: str, index: int, shard: Dict) -> Dict:
    """A part's shard as the merged manifest lists it: a data-root shard by its URI as it
    is; one inside the part's folder copied (hard-linked locally) into ``dataset``."""
    if uris.resolve(part, shard["file"]) == shard["file"]:  # a URI or an absolute path
        return dict(shard)
    name = f"{split}/part-{index:03d}-{shard['file'].rsplit('/', 1)[-1]}"
    uris.makedirs(uris.join(dataset, split))
    uris.link_or_copy(uris.join(part, shard["file"]), uris.join(dataset, name))
    return {**shard, "file": name}


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
