"""The Dataset directory: the one contract between the components that write sharded data
(shard_tfrecords, merge_datasets) and those that read it (the tf.data reader, train,
diagnose_bottleneck, batch_predict).

A Dataset directory holds ``schema.json`` (see ``schema``), ``manifest.json`` and the
shards. The manifest lists, per split, the record and byte counts and every shard file by a
path relative to the directory (or a full URI, in a merged Dataset), with the compression
of all of them. Only this module reads or writes the manifest; everything else asks it.
"""

import dataclasses
import json
from typing import Dict, List, Sequence, Tuple, TypeVar

from tfkfp.components.common import uris
from tfkfp.components.common.schema import SCHEMA_FILE, SchemaError

MANIFEST_FILE = "manifest.json"
SPLITS = ("train", "eval")
COMPRESSIONS = ("none", "gzip")  # as users and manifests name them
_TF_COMPRESSION = {"none": "", "gzip": "GZIP"}  # as tf.data and TFRecordWriter name them
T = TypeVar("T")


def tf_compression(compression: str) -> str:
    """TensorFlow's name (``""`` or ``"GZIP"``) for a manifest's compression."""
    if compression not in _TF_COMPRESSION:
        raise SchemaError(f"compression {compression!r} is not one of {COMPRESSIONS}")
    return _TF_COMPRESSION[compression]


def compression_of_files(files: Sequence[str], where: str) -> str:
    """The compression of TFRecord files named by a pattern: ``gzip`` when they end in .gz."""
    gz = {f.endswith(".gz") for f in files}
    if len(gz) > 1:
        raise SchemaError(f"{where} matches both .gz and uncompressed files")
    return "gzip" if gz.pop() else "none"


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` in the Dataset directory ``data`` says: per split
    ``{"records", "bytes", "shards"}``, each shard a dict with at least ``file`` and
    ``records``."""

    data: str
    splits: Dict[str, Dict]
    compression: str = "none"
    merged_from: Tuple[str, ...] = ()

    @classmethod
    def load(cls, data: str) -> "Manifest":
        path = uris.join(data, MANIFEST_FILE)
        if not uris.exists(path):
            raise SchemaError(f"{data} has no {MANIFEST_FILE}: it is not a complete Dataset "
                              "directory written by shard_tfrecords or merge_datasets")
        body = json.loads(uris.read_text(path))
        return cls(data, body["splits"], body.get("compression", "none"),
                   tuple(body.get("merged_from", ())))

    def save(self) -> str:
        """Write the manifest atomically: it goes last, so its presence means complete."""
        body = {"version": 1, "compression": self.compression, "schema": SCHEMA_FILE,
                "splits": self.splits}
        if self.merged_from:
            body["merged_from"] = list(self.merged_from)
        path = uris.join(self.data, MANIFEST_FILE)
        uris.write_text_atomic(path, json.dumps(body, indent=2) + "\n")
        return path

    def split(self, name: str) -> Dict:
        if name not in self.splits:
            raise SchemaError(f"{uris.join(self.data, MANIFEST_FILE)} has no split {name!r}; "
                              f"it has {sorted(self.splits)}")
        return self.splits[name]

    def records(self, split: str) -> int:
        return int(self.split(split)["records"])

    def shard_files(self, split: str) -> List[str]:
        """The split's shard files as URIs (relative entries resolved against ``data``)."""
        return [uris.resolve(self.data, s["file"]) for s in self.split(split)["shards"]]

    def shard_records(self, split: str) -> List[int]:
        return [int(s["records"]) for s in self.split(split)["shards"]]


def is_dataset(uri: str) -> bool:
    """Whether ``uri`` is a complete Dataset directory."""
    return uris.isdir(uri) and uris.exists(uris.join(uri, MANIFEST_FILE))


def split_files(data: str, split: str) -> Tuple[List[str], str]:
    """The TFRecord files of one split and their compression in TensorFlow's terms.

    ``data`` is a Dataset directory or a TFRecord file pattern (whose compression follows
    the ``.gz`` extension; a pattern has no splits).
    """
    if uris.isdir(data):
        manifest = Manifest.load(data)
        return manifest.shard_files(split), tf_compression(manifest.compression)
    files = uris.glob(data)
    if not files:
        raise SchemaError(f"no TFRecord files match {data}")
    return files, tf_compression(compression_of_files(files, data))


def select_group(items: Sequence[T], group: int, num_groups: int, what: str = "file",
                 error: type = ValueError, allow_empty: bool = False) -> List[T]:
    """Every ``num_groups``-th item starting at ``group``: one task's share of a fan-out
    (``what`` names the items in messages; ``error`` is the caller's error class)."""
    if num_groups < 1 or not 0 <= group < num_groups:
        raise error(f"{what} group {group} of {num_groups} is not valid; expected "
                    f"num_{what}_groups >= 1 and 0 <= {what}_group < num_{what}_groups")
    chosen = list(items[group::num_groups])
    if not chosen and not allow_empty:
        raise error(f"{what} group {group} of {num_groups} is empty: the input has only "
                    f"{len(items)} {what}s")
    return chosen
