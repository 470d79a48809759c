"""Publishing a staged Dataset over the one in the output directory, and the leftovers of
killed runs.

At every instant the output directory holds the old complete Dataset or the new one:

1. the new shards are written in the staging folder under names the old manifest does not
   list (the generation goes up by one: ``data-00000-of-00004-g2.tfrecord``), then moved
   into ``train/`` and ``eval/`` beside the old shards, which stay whole (on an S3-compatible
   store, where an object appears only once written whole and a rename is a copy, they are
   written there directly under those new names: ``writes_in_place``);
2. schema.json is replaced, where it changed (the manifest records its SHA-256, so a reader
   finds a kill between this step and the next, instead of mixing the two);
3. manifest.json is moved over the old one in one rename: the commit (an object written
   whole on gs://, where a rename is a copy and a delete);
4. only then are the shards that no manifest lists any more removed.

Readers read manifest.json, so they see either Dataset; a kill before step 3 leaves the old
one readable, after it the new one. Shards moved in by a killed run are removed by the next
run's step 4, its staging and spool folders by ``remove_leftovers`` (see common.platform.scratch).
Tests stop a run at the points named in ``scratch.pause_point`` calls: ``encoding``,
``writing`` (writer), ``publishing``, ``committing`` and ``cleaning`` (here).
"""

import tempfile
from typing import Dict, Set

from tfkfp.components.common.data.dataset import MANIFEST_FILE, SPLITS, Manifest
from tfkfp.components.common.data.schema import SCHEMA_FILE
from tfkfp.components.common.platform import object_store, scratch, uris
from tfkfp.components.common.platform.progress import log

STAGING_PREFIX = ".tfkfp-staging-"  # in the output directory
SPOOL_PREFIX = "tfkfp-spool-"  # in the system temp directory


def spool_parent() -> str:
    return tempfile.gettempdir()


def remove_leftovers(output_dir: str) -> None:
    """Remove the staging folders in output_dir and the spool folders in the temp directory
    that killed runs left behind (only those whose owner is gone)."""
    scratch.remove_abandoned(output_dir, STAGING_PREFIX)
    scratch.remove_abandoned(spool_parent(), SPOOL_PREFIX)


def next_generation(output_dir: str) -> int:
    """0 for a new Dataset; one more than the current manifest's when one is there. (Shards
    kept elsewhere by a killed attempt that left no manifest are overwritten whole under the
    same names, or removed after the commit.)"""
    if not uris.exists(uris.join(output_dir, MANIFEST_FILE)):
        return 0
    try:
        return Manifest.load(output_dir).generation + 1
    except Exception as err:  # noqa: BLE001 - unreadable: not a Dataset anyone can read
        log.warning("%s is unreadable (%s); it is replaced", uris.join(output_dir,
                                                                       MANIFEST_FILE), err)
        return 1


def writes_in_place(shard_dir: str) -> bool:
    """Whether shards are written straight to their final names in shard_dir (an object
    store, where an object appears whole when written and a rename is a copy): safe, since
    their names are new in each generation and readers trust only what a manifest lists."""
    return object_store.handles(shard_dir)


def publish(staging: str, manifest: Manifest, shard_dir: str = "",
            shards_in_place: bool = False) -> None:
    """Move the Dataset staged in ``staging`` (shards, schema.json) into ``manifest.data``
    (the shards into ``shard_dir`` when they are kept elsewhere; not at all when they were
    written there in place), whose manifest it then replaces; see the module docstring."""
    output_dir = manifest.data
    shard_dir = shard_dir or output_dir
    moved = 0
    for split, body in manifest.splits.items():
        uris.makedirs(uris.join(shard_dir, split))
        for shard in body["shards"]:
            name = _name_in(shard_dir, shard["file"])
            if not shards_in_place:
                uris.rename(uris.join(staging, name), uris.join(shard_dir, name))
            moved += 1
            if moved == 1:
                scratch.pause_point("publishing")
    together = shard_dir == output_dir  # staging sits beside the manifest: renames commit
    _replace_schema(staging, output_dir, together)
    scratch.pause_point("committing")
    manifest.save(staging if together else "")
    scratch.pause_point("cleaning")
    remove_unlisted(shard_dir, {_name_in(shard_dir, f) for f in manifest.listed()})


def _name_in(shard_dir: str, file: str) -> str:
    """A manifest entry as a path inside shard_dir (entries kept elsewhere are URIs)."""
    prefix = shard_dir.rstrip("/") + "/"
    return file[len(prefix):] if file.startswith(prefix) else file


def _replace_schema(staging: str, output_dir: str, rename: bool = True) -> None:
    new, old = uris.join(staging, SCHEMA_FILE), uris.join(output_dir, SCHEMA_FILE)
    text = uris.read_text(new)
    if uris.exists(old) and uris.read_text(old) == text:
        return  # unchanged: nothing to swap
    if rename:
        uris.rename(new, old)
    else:  # another store than the staging folder's: written whole beside the manifest
        uris.write_text_atomic(old, text)


def remove_unlisted(output_dir: str, listed: Set[str]) -> Dict[str, int]:
    """Remove the shard files in the split folders that the manifest does not list."""
    removed = {}
    for split in SPLITS:
        folder = uris.join(output_dir, split)
        if not uris.isdir(folder):
            continue
        stale = [n for n in uris.listdir(folder)
                 if n.startswith("data-") and f"{split}/{n}" not in listed]
        for name in stale:
            uris.remove(uris.join(folder, name))
        removed[split] = len(stale)
    return removed
