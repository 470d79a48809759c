"""Local paths and remote URIs (gs://, s3://, ...) behind one small interface.

Local paths use the standard library (no TensorFlow import, so reading input stays
light); ``s3://`` and ``minio://`` go through pyarrow (``object_store``: TensorFlow has no
S3 filesystem); any other scheme through ``tf.io.gfile``, which handles gs:// in TF 2.21
out of the box. A remote lookup (exists, isdir, glob, listdir, size, mtime) is retried on
transient faults (``transient``); any other error is raised at once.
"""

import contextlib
import functools
import glob as _glob
import os
import re
import shutil
import uuid
from typing import IO, Dict, Iterator, List

from tfkfp.components.common.platform import kfp_mounts, object_store, transient

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


SUPPORTED_SCHEMES = ("gs://", "s3://", "minio://", "file://")


def unsupported_scheme(uri: str) -> str:
    """Why uri's scheme cannot be read or written by the suite ("" when it can)."""
    if not _SCHEME.match(uri) or uri.startswith(SUPPORTED_SCHEMES):
        return ""
    return (f"{uri!r} has a scheme the suite does not read or write; use a local path or "
            f"one of {', '.join(s + '...' for s in SUPPORTED_SCHEMES)}")


def is_remote(uri: str) -> bool:
    """True for URIs with a scheme (gs://, s3://, hdfs://), False for local paths."""
    return bool(_SCHEME.match(uri)) and not uri.startswith("file://")


def _retried(fn):
    """``fn(uri, ...)``, retried on transient faults where uri is remote (see transient)."""
    @functools.wraps(fn)
    def call(uri: str, *args):
        if not is_remote(uri):
            return fn(uri, *args)
        return transient.call(f"{fn.__name__} {uri}", fn, uri, *args)

    return call


def local_path(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def _by_place(uri: str, store, gfile, local):
    """Where ``uri`` lives, said once: ``store(uri)`` on an object store (object_store: s3://,
    minio://), ``gfile(tf.io.gfile, uri)`` for any other scheme, ``local(path)`` for a local
    path or file:// URI."""
    if object_store.handles(uri):
        return store(uri)
    if is_remote(uri):
        return gfile(_gfile(), uri)
    return local(local_path(uri))


def tf_reads(uri: str) -> bool:
    """Whether TensorFlow's own file ops (TFRecordDataset, TFRecordWriter, SavedModel) take
    uri as it is; an object-store URI has to be fetched or staged locally first."""
    return not object_store.handles(uri)


@contextlib.contextmanager
def tf_writable(uri: str) -> Iterator[str]:
    """A path TensorFlow's writers take for uri: uri itself, or for an object store a
    private local file uploaded when the block succeeds (removed whatever happens)."""
    if tf_reads(uri):
        yield uri
        return
    import tempfile

    handle, temp = tempfile.mkstemp(prefix="tfkfp-upload-", suffix=os.path.basename(uri))
    os.close(handle)
    try:
        yield temp
        object_store.copy(temp, uri)
    finally:
        os.remove(temp)


def join(base: str, *parts: str) -> str:
    if is_remote(base):
        return "/".join([base.rstrip("/"), *parts])
    return os.path.join(local_path(base), *parts)


class PlaceError(ValueError):
    """A path given as a setting that leaves the places it may name."""


def resolve_setting(name: str, value: str, base: str = "") -> str:
    """Where the path or URI that the setting ``name`` gives is, resolved once, so that every
    step and every later reader sees one place: a URI as it is, an absolute path normalised,
    a relative path taken from ``base`` (default: the working folder, where ``tfkfp run`` was
    started and its local tasks run), which it may not leave.

    Raises:
        PlaceError: a relative path that climbs out of ``base``, or a URI with a ``..``
            segment (an object store keeps it in the key), naming the setting and where it
            would have gone.
    """
    if is_remote(value):
        if ".." in value.split("://", 1)[1].split("/"):
            raise PlaceError(f"{name} {value!r} has a '..' segment, which an object store "
                             "keeps as part of the key rather than going up a folder; give "
                             "the URI without it")
        return value
    path = local_path(value)
    if os.path.isabs(path):
        return os.path.normpath(path)
    base = os.path.abspath(base or os.getcwd())
    resolved = os.path.normpath(os.path.join(base, path))
    if os.path.commonpath([resolved, base]) != base:
        raise PlaceError(f"{name} {value!r} leaves {base}, the folder relative paths are "
                         f"taken from: it would go to {resolved}; give a folder inside it, "
                         "an absolute path, or a gs://, s3:// or minio:// URI")
    return resolved


def resolve(base: str, path: str) -> str:
    """``path`` if it is absolute or a URI, else ``path`` inside ``base``."""
    if is_remote(path) or os.path.isabs(local_path(path)):
        return path
    return join(base, path)


@_retried
def exists(uri: str) -> bool:
    return _by_place(uri, object_store.exists, lambda g, u: g.exists(u), os.path.exists)


@_retried
def isdir(uri: str) -> bool:
    return _by_place(uri, object_store.isdir, lambda g, u: g.isdir(u), os.path.isdir)


@_retried
def glob(pattern: str) -> List[str]:
    """Sorted matches of a glob pattern (sorted so every run sees the same order)."""
    return _by_place(pattern, object_store.glob, lambda g, p: sorted(g.glob(p)),
                     lambda p: sorted(_glob.glob(p)))


@_retried
def listdir(uri: str) -> List[str]:
    return _by_place(uri, object_store.listdir,
                     lambda g, u: sorted(name.rstrip("/") for name in g.listdir(u)),
                     lambda p: sorted(os.listdir(p)))


@_retried
def size(uri: str) -> int:
    return _by_place(uri, object_store.size, lambda g, u: g.stat(u).length, os.path.getsize)


@_retried
def mtime(uri: str) -> float:
    """Modification time in epoch seconds (an object's generation time on gs://)."""
    return _by_place(uri, object_store.mtime, lambda g, u: g.stat(u).mtime_nsec / 1e9,
                     os.path.getmtime)


def makedirs(uri: str) -> None:
    _by_place(uri, object_store.makedirs, lambda g, u: g.makedirs(u),
              lambda p: os.makedirs(p, exist_ok=True))


def open_file(uri: str, mode: str = "rb") -> IO:
    return _by_place(uri, lambda u: object_store.open_file(u, mode),
                     lambda g, u: g.GFile(u, mode), lambda p: open(p, mode))


def rename(src: str, dst: str) -> None:
    """Move src over dst (atomic for local files on one filesystem; a copy and a delete
    on object stores)."""
    _by_place(src, lambda s: object_store.rename(s, dst),
              lambda g, s: g.rename(s, dst, overwrite=True),
              lambda p: os.replace(p, local_path(dst)))


def remove(uri: str) -> None:
    _by_place(uri, object_store.remove, lambda g, u: g.remove(u), os.remove)


def rmtree(uri: str) -> None:
    """Remove a folder and all it holds; a folder that is not there is no error."""
    _by_place(uri, object_store.rmtree, _gfile_rmtree,
              lambda p: shutil.rmtree(p, ignore_errors=True))


def _gfile_rmtree(gfile, uri: str) -> None:
    if gfile.exists(uri):
        gfile.rmtree(uri)


def read_text(uri: str) -> str:
    with open_file(uri, "rb") as f:
        return f.read().decode("utf-8")


def write_text_atomic(uri: str, text: str) -> None:
    """Write text to a temporary sibling, then rename it over uri (an object is written
    whole, so on an object store it is written in place: a rename there is a copy)."""
    if object_store.handles(uri):
        with open_file(uri, "wb") as f:
            f.write(text.encode("utf-8"))
        return
    tmp = f"{uri}.tmp-{uuid.uuid4().hex[:8]}"
    with open_file(tmp, "wb") as f:
        f.write(text.encode("utf-8"))
    rename(tmp, uri)


def sibling_temp(path: str) -> str:
    """A unique hidden name beside path, to write under and then rename into place."""
    head, _, name = path.rstrip("/").rpartition("/")
    return join(head or ".", f".{name}.tmp-{uuid.uuid4().hex[:12]}")


@contextlib.contextmanager
def replaced_dir(target: str) -> Iterator[str]:
    """A hidden sibling folder to write into; when the block succeeds it replaces target
    (file or folder) in one rename, and whatever happens the staging folder goes away. A
    reader never sees half a folder."""
    staging = sibling_temp(target)
    try:
        makedirs(staging)
        yield staging
        if isdir(target):
            rmtree(target)
        elif exists(target):
            remove(target)
        rename(staging, target)
    finally:
        if exists(staging):
            rmtree(staging)


def publish_dir(files: Dict[str, bytes], target: str) -> str:
    """Write ``{name: content}`` into a staging sibling of target, then move it into place.

    A reader never sees half a folder: until the final rename, target holds what it held
    before (or nothing), and a failure removes the staging folder.
    """
    with replaced_dir(target) as staging:
        for name, content in files.items():
            with open_file(join(staging, name), "wb") as f:
                f.write(content)
    return target


def kfp_remote_uri(path: str) -> str | None:
    """The object-store URI behind a KFP artifact path (``/gcs/B/...``, ``/minio/B/...``,
    ``/s3/B/...``: kfp_mounts), the URI itself when it is one, or None for a path only
    this machine can see."""
    return path if is_remote(path) else kfp_mounts.uri_of(path)


def link_or_copy(src: str, dst: str) -> None:
    """dst with src's bytes: a hard link where both are on one local filesystem (nothing is
    copied; the files are immutable once published), else a copy (remote on either side)."""
    if not is_remote(src) and not is_remote(dst):
        source, target = local_path(src), local_path(dst)
        if os.path.lexists(target):
            os.remove(target)
        try:
            os.link(source, target)
        except OSError:  # another filesystem, or hard links not allowed there
            shutil.copyfile(source, target)
        return
    if object_store.handles(src) or object_store.handles(dst):
        object_store.copy(src, dst)
        return
    _gfile().copy(src, dst, overwrite=True)


def copy_tree(src: str, dst: str) -> None:
    """Copy a folder (local or remote, either side) into dst, which is replaced whole."""
    with replaced_dir(dst) as staging:
        if not is_remote(src) and not is_remote(staging):
            shutil.copytree(local_path(src), local_path(staging), dirs_exist_ok=True)
            return
        if object_store.handles(src) or object_store.handles(staging):
            object_store.copy(src, staging)
            return
        gfile = _gfile()
        for folder, _, files in gfile.walk(src):
            relative = folder[len(src.rstrip("/")):].strip("/")
            target = join(staging, *([relative] if relative else []))
            makedirs(target)
            for name in files:
                gfile.copy(join(folder, name), join(target, name), overwrite=True)
