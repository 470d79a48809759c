"""The Dataset directory: the one contract between the components that write sharded data
(shard_tfrecords, merge_datasets) and those that read it (the tf.data reader, train,
diagnose_bottleneck, batch_predict).

A Dataset directory holds ``schema.json`` (see ``schema``), ``manifest.json`` and the
shards. The manifest lists, per split, the record and byte counts and every shard file by a
path relative to the directory (or a full URI, in a merged Dataset) with its records, bytes
and CRC32C, the compression of all of them, the SHA-256 of the schema.json it was written
with, and its generation (each rewrite of a Dataset in place names its shards anew, so the
old manifest's shards stay whole until the new manifest replaces it). Only this module
reads or writes the manifest; everything else asks it.

Readers get the shards through ``Manifest.shard_files`` / ``split_files``, which check them
first: one stat per shard against the manifest's bytes (a shard truncated or replaced since
it was written, even on a record boundary, is an error naming it), and schema.json against
the manifest's digest. Shards named by a pattern rather than their directory are matched to
the manifest beside them with ``listing_of``, so a reader checks them the same way.
"""

import concurrent.futures
import dataclasses
import hashlib
import json
import os
from typing import Dict, List, Sequence, Set, Tuple, TypeVar

from tfkfp.components.common.data.schema import SCHEMA_FILE, SchemaError
from tfkfp.components.common.platform import uris

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


class DatasetMismatchError(SchemaError):
    """A Dataset whose files disagree with its manifest (a shard truncated, replaced or gone;
    a schema.json that is not the one the manifest was written with)."""


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` in the Dataset directory ``data`` says: per split
    ``{"records", "bytes", "shards"}``, each shard a dict with at least ``file`` and
    ``records`` (and ``bytes``, checked before reading, where the writer recorded it)."""

    data: str
    splits: Dict[str, Dict]
    compression: str = "none"
    merged_from: Tuple[str, ...] = ()
    generation: int = 0
    schema_sha256: str = ""

    @classmethod
    def load(cls, data: str) -> "Manifest":
        path = uris.join(data, MANIFEST_FILE)
        if not uris.exists(path):
            raise SchemaError(f"{data} has no {MANIFEST_FILE}: it is not a complete Dataset "
                              "directory written by shard_tfrecords or merge_datasets")
        body = json.loads(uris.read_text(path))
        return cls(data, body["splits"], body.get("compression", "none"),
                   tuple(body.get("merged_from", ())), int(body.get("generation", 0)),
                   body.get("schema_sha256", ""))

    def save(self, staging: str = "") -> str:
        """Write the manifest in one rename over the old one: it goes last, so its presence
        means complete. It records the digest of the schema.json beside it, if any. With
        ``staging`` (a folder on the same filesystem) the file is written there first."""
        schema = uris.join(self.data, SCHEMA_FILE)
        digest = _sha256(schema) if uris.exists(schema) else ""
        body = {"version": 1, "compression": self.compression, "schema": SCHEMA_FILE,
                "generation": self.generation, "splits": self.splits}
        if digest:
            body["schema_sha256"] = digest
        if self.merged_from:
            body["merged_from"] = list(self.merged_from)
        path = uris.join(self.data, MANIFEST_FILE)
        text = json.dumps(body, indent=2) + "\n"
        if not staging:
            uris.write_text_atomic(path, text)
            return path
        uris.write_text_atomic(uris.join(staging, MANIFEST_FILE), text)
        uris.rename(uris.join(staging, MANIFEST_FILE), path)
        return path

    def split(self, name: str) -> Dict:
        if name not in self.splits:
            raise SchemaError(f"{uris.join(self.data, MANIFEST_FILE)} has no split {name!r}; "
                              f"it has {sorted(self.splits)}")
        return self.splits[name]

    def records(self, split: str) -> int:
        return int(self.split(split)["records"])

    def shard_files(self, split: str, check: bool = True) -> List[str]:
        """The split's shard files as URIs (relative entries resolved against ``data``),
        checked against the manifest first (see ``check``) unless ``check`` is False."""
        files = [uris.resolve(self.data, s["file"]) for s in self.split(split)["shards"]]
        if check:
            check_sizes(files, self.shard_sizes(split), uris.join(self.data, MANIFEST_FILE),
                        self.shard_records(split))
            self.check_schema()
        return files

    def shard_records(self, split: str) -> List[int]:
        """Each shard's rows (examples)."""
        return [int(s["records"]) for s in self.split(split)["shards"]]

    def shard_blocks(self, split: str) -> List[int]:
        """Each shard's TFRecord records: its rows but in the ``blocks`` layout."""
        return [int(s.get("blocks", s["records"])) for s in self.split(split)["shards"]]

    def shard_sizes(self, split: str) -> List[int | None]:
        """Each shard's bytes as written (None where the manifest does not say)."""
        return [None if s.get("bytes") is None else int(s["bytes"])
                for s in self.split(split)["shards"]]

    def listed(self) -> Set[str]:
        """Every shard entry's ``file``, as the manifest names it."""
        return {s["file"] for body in self.splits.values() for s in body["shards"]}

    def check_schema(self) -> None:
        """Raise DatasetMismatchError when schema.json is not the one this manifest was
        written with (a rewrite interrupted between the two, or an edited schema)."""
        if not self.schema_sha256:
            return
        path = uris.join(self.data, SCHEMA_FILE)
        found = _sha256(path) if uris.exists(path) else "nothing"
        if found != self.schema_sha256:
            raise DatasetMismatchError(
                f"{path} does not match {uris.join(self.data, MANIFEST_FILE)}: expected "
                f"SHA-256 {self.schema_sha256}, found {found}; the Dataset was changed after "
                "it was written (or a rewrite was interrupted): shard the data again")


def check_sizes(files: Sequence[str], sizes: Sequence[int | None], manifest: str,
                records: Sequence[int | None] = ()) -> None:
    """One stat per shard: raise DatasetMismatchError naming every shard whose size is not
    the one ``manifest`` lists (None: not recorded, not checked), with the records it lists
    for the shard where ``records`` says (the rows a reader would silently lose)."""
    listed = list(records) or [None] * len(files)
    known = [(f, want, n) for f, want, n in zip(files, sizes, listed) if want is not None]
    found = _sizes([f for f, _, _ in known])
    bad = [f"{f} is {'missing' if have is None else f'{have} bytes'}, expected {want} bytes"
           + ("" if n is None else f" holding {n} records")
           for (f, want, n), have in zip(known, found) if have != want]
    if bad:
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        raise DatasetMismatchError(
            f"{len(bad)} shard(s) of {manifest} do not match it: {'; '.join(bad[:5])}{more}. "
            "A shard was truncated, replaced or removed after it was written; shard the data "
            "again or restore the files")


def _sizes(files: Sequence[str]) -> List[int | None]:
    if not any(uris.is_remote(f) for f in files):
        return [_size(f) for f in files]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:  # one round trip each
        return list(pool.map(_size, files))


def _size(uri: str) -> int | None:
    try:
        return uris.size(uri)
    except Exception:  # FileNotFoundError locally, NotFoundError remotely
        if uris.exists(uri):
            raise
        return None


def _sha256(uri: str) -> str:
    with uris.open_file(uri, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


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


@dataclasses.dataclass(frozen=True)
class Listing:
    """What the manifests of the Dataset directories some TFRecord files sit in say of them,
    file by file (None for a file that sits in no Dataset directory)."""

    records: Tuple[int | None, ...]  # the rows each file holds
    sizes: Tuple[int | None, ...]  # the bytes each file was written with
    manifest: str  # the manifest.json file(s) listing them; "" for none


def listing_of(files: Sequence[str], check_schema: bool = True) -> Listing:
    """Each TFRecord file's entry in the manifest of the Dataset directory it sits in.

    A pattern such as ``data/train/*.tfrecord`` names shards without their Dataset
    directory, but the manifest beside them (in the file's folder or the one above, where
    shard_tfrecords writes its split folders) still says what each shard holds: a reader
    checks them with it as it checks the directory's own shards, so a shard cut on a record
    boundary is refused rather than read short. ``check_schema``: also check schema.json
    against each manifest (for a caller that reads the schema beside the shards).

    Raises DatasetMismatchError for a file in a Dataset directory whose manifest does not
    list it: its rows are not the Dataset's (a leftover of an earlier or interrupted write,
    or a file put there by hand).
    """
    owners: Dict[str, Tuple[Manifest, Dict[str, Dict]] | None] = {}
    entries: List[Dict | None] = []
    used: Dict[str, Manifest] = {}
    for path in files:
        owner = next((o for o in (_owner(f, owners) for f in _folders(path)) if o), None)
        if owner is None:
            entries.append(None)
            continue
        manifest, shards = owner
        if _key(path) not in shards:
            raise DatasetMismatchError(
                f"{path} sits in the Dataset directory {manifest.data}, but its "
                f"{MANIFEST_FILE} does not list it, so its rows are not the Dataset's (a "
                "leftover of an earlier or interrupted write, or a file put there by hand); "
                "pass the Dataset directory to read the shards it lists, or move the file out")
        entries.append(shards[_key(path)])
        used[manifest.data] = manifest
    for manifest in used.values() if check_schema else ():
        manifest.check_schema()
    return Listing(tuple(None if e is None else int(e["records"]) for e in entries),
                   tuple(None if e is None or e.get("bytes") is None else int(e["bytes"])
                         for e in entries),
                   " and ".join(uris.join(data, MANIFEST_FILE) for data in used))


def _folders(path: str) -> List[str]:
    """The folder a file sits in and the one above it."""
    if not uris.is_remote(path):
        first = os.path.dirname(_key(path))
        return [first, os.path.dirname(first)]
    first = path.rstrip("/").rpartition("/")[0]
    return [f for f in (first, first.rpartition("/")[0]) if "://" in f]


def _owner(folder: str, owners: Dict) -> Tuple["Manifest", Dict[str, Dict]] | None:
    """The manifest of ``folder`` with its shard entries by file, if it is a Dataset
    directory (cached in ``owners``: one look per folder, however many files it holds)."""
    if folder not in owners:
        owners[folder] = None
        if uris.exists(uris.join(folder, MANIFEST_FILE)):
            manifest = Manifest.load(folder)
            owners[folder] = (manifest, {_key(uris.resolve(folder, s["file"])): s
                                         for body in manifest.splits.values()
                                         for s in body["shards"]})
    return owners[folder]


def _key(path: str) -> str:
    """One spelling per file, to match a pattern's matches to a manifest's entries."""
    return path if uris.is_remote(path) else os.path.normpath(os.path.abspath(
        uris.local_path(path)))


def select_group(items: Sequence[T], group: int, num_groups: int, what: str = "file",
                 error: type = ValueError, allow_empty: bool = False) -> List[T]:
    """Every ``num_groups``-th item starting at ``group``: one task's share of a fan-out
    (``what`` names the items in messages; ``error`` is the caller's error class)."""
    if num_groups < 1 or not 0 <= group < num_groups:
        raise error(f"file group {group} of {num_groups} is not valid; expected "
                    "file_groups >= 1 and 0 <= file_group < file_groups")
    chosen = list(items[group::num_groups])
    if not chosen and not allow_empty:
        raise error(f"file group {group} of {num_groups} is empty: the input has only "
                    f"{len(items)} {what}s")
    return chosen
