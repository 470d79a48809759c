"""S3-compatible object stores (``s3://`` and ``minio://``) through ``pyarrow.fs``.

TensorFlow 2.21 has no ``s3://`` filesystem, so ``uris`` sends these schemes here. The
client is configured the way S3 clients conventionally are, so that a pod, a laptop and CI
need no suite-specific settings:

- endpoint: ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (MinIO, SeaweedFS, Ceph...);
  for ``minio://`` without either, KFP's in-cluster artifact store
  (``http://minio-service.kubeflow:9000``, the Service name KFP keeps for SeaweedFS too);
- credentials: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
  ``~/.aws`` files, then the pod's identity (web identity token, instance metadata);
- region ``AWS_REGION``/``AWS_DEFAULT_REGION``; a private CA ``AWS_CA_BUNDLE``.

Objects are written whole (a multipart upload is visible only once complete), so a writer
needs no temporary name; a "rename" is a copy and a delete, which callers avoid by
publishing under unique names and committing with the manifest (see shard_tfrecords'
publish). Folders are key prefixes: they exist when a key is under them.
"""

import fnmatch
import functools
import io
import os
import re
from typing import IO, List, Tuple

SCHEMES = ("s3", "minio")
KFP_MINIO_ENDPOINT = "http://minio-service.kubeflow:9000"
_URI = re.compile(r"^(s3|minio)://([^/]+)/?(.*)$")


class ObjectStoreError(ValueError):
    """An S3 URI or store setting that cannot work, with what was wrong and the fix."""


def handles(uri: str) -> bool:
    return uri.split("://", 1)[0] in SCHEMES if "://" in uri else False


def split(uri: str) -> Tuple[str, str, str]:
    """``(scheme, bucket, key)`` of ``s3://bucket/key``."""
    match = _URI.match(uri)
    if not match:
        raise ObjectStoreError(f"{uri!r} is not an object URI: expected s3://BUCKET/KEY or "
                               f"minio://BUCKET/KEY")
    return match.group(1), match.group(2), match.group(3).strip("/")


def endpoint(scheme: str) -> str | None:
    """The endpoint URL for ``scheme``, as the environment gives it (None: AWS itself)."""
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return url or (KFP_MINIO_ENDPOINT if scheme == "minio" else None)


def filesystem(scheme: str):
    """The pyarrow S3 filesystem for ``scheme`` under the current environment."""
    url = endpoint(scheme)
    return _filesystem(url, os.environ.get("AWS_REGION") or os.environ.get(
        "AWS_DEFAULT_REGION"), os.environ.get("AWS_CA_BUNDLE"),
        os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY"))


@functools.lru_cache(maxsize=8)
def _filesystem(url: str | None, region: str | None, ca_file: str | None,
                access_key: str | None, secret_key: str | None):
    # the keys are part of the cache key only, so that a changed environment gets a new
    # client; pyarrow reads them (and a session token) from the environment itself
    del access_key, secret_key
    try:
        from pyarrow import fs
    except ImportError as err:
        raise ObjectStoreError("s3:// and minio:// need pyarrow: from a tfkfp checkout, "
                               "pip install '.[local]'") from err
    options = {"region": region or "us-east-1", "tls_ca_file_path": ca_file}
    if url:
        scheme, _, host = url.partition("://")
        if not host:
            raise ObjectStoreError(f"AWS_ENDPOINT_URL {url!r} needs a scheme: "
                                   f"http://HOST:PORT or https://HOST:PORT")
        options.update(endpoint_override=host.rstrip("/"), scheme=scheme)
    return fs.S3FileSystem(**{k: v for k, v in options.items() if v is not None})


def _fs_path(uri: str):
    scheme, bucket, key = split(uri)
    return filesystem(scheme), f"{bucket}/{key}".rstrip("/")


def _info(uri: str):
    store, path = _fs_path(uri)
    return store.get_file_info(path)


def exists(uri: str) -> bool:
    from pyarrow import fs

    return _info(uri).type != fs.FileType.NotFound


def isdir(uri: str) -> bool:
    from pyarrow import fs

    return _info(uri).type == fs.FileType.Directory


def size(uri: str) -> int:
    info = _info(uri)
    if info.size is None:
        raise FileNotFoundError(f"{uri}: no such object")
    return info.size


def mtime(uri: str) -> float:
    info = _info(uri)
    return info.mtime.timestamp() if info.mtime else 0.0


def listdir(uri: str) -> List[str]:
    from pyarrow import fs

    store, path = _fs_path(uri)
    infos = store.get_file_info(fs.FileSelector(path, allow_not_found=False))
    return sorted(info.base_name for info in infos)


def glob(pattern: str) -> List[str]:
    """Keys matching a shell pattern, listed under the pattern's fixed prefix."""
    from pyarrow import fs

    scheme, bucket, key = split(pattern)
    fixed = re.split(r"[*?\[]", key, maxsplit=1)[0].rpartition("/")[0]
    store = filesystem(scheme)
    base = f"{bucket}/{fixed}".rstrip("/")
    recursive = "/" in key[len(fixed):].strip("/")
    infos = store.get_file_info(fs.FileSelector(base, allow_not_found=True,
                                                recursive=recursive))
    wanted = f"{bucket}/{key}"
    return sorted(f"{scheme}://{info.path}" for info in infos
                  if fnmatch.fnmatchcase(info.path, wanted)
                  and info.path.count("/") == wanted.count("/"))


def makedirs(uri: str) -> None:
    """Nothing to make: a folder is a key prefix, there once something is written under it."""
    split(uri)


def open_file(uri: str, mode: str = "rb") -> IO:
    store, path = _fs_path(uri)
    if mode in ("rb", "r"):
        # random access (readers seek to byte ranges), buffered: pyarrow's file has no
        # readline, and small reads would each be a request
        stream = io.BufferedReader(_RawInput(store.open_input_file(path)), 1 << 20)
    elif mode in ("wb", "w"):
        stream = store.open_output_stream(path)
    else:
        raise ObjectStoreError(f"mode {mode!r} is not supported for {uri}: rb or wb")
    if mode in ("r", "w"):
        return io.TextIOWrapper(stream, encoding="utf-8")
    return stream


class _RawInput(io.RawIOBase):
    """A pyarrow random-access file as the raw stream ``io.BufferedReader`` buffers."""

    def __init__(self, native):
        self._native = native

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._native.readinto(buffer)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._native.seek(offset, whence)

    def tell(self) -> int:
        return self._native.tell()

    def close(self) -> None:
        self._native.close()
        super().close()


def copy(src: str, dst: str) -> None:
    """Copy between an object store and a local path or another object, streamed."""
    from pyarrow import fs

    def resolve(uri):
        if handles(uri):
            return _fs_path(uri)
        if "://" in uri and not uri.startswith("file://"):
            raise ObjectStoreError(f"cannot copy between {src} and {dst}: one side must be "
                                   f"a local path or both S3-compatible")
        return fs.LocalFileSystem(), os.path.abspath(uri.removeprefix("file://"))

    (src_fs, src_path), (dst_fs, dst_path) = resolve(src), resolve(dst)
    if not handles(dst):  # pyarrow makes the folders below the destination, not above it
        folder = src_fs.get_file_info(src_path).type == fs.FileType.Directory
        os.makedirs(dst_path if folder else os.path.dirname(dst_path), exist_ok=True)
    fs.copy_files(src_path, dst_path, source_filesystem=src_fs, destination_filesystem=dst_fs,
                  chunk_size=8 << 20, use_threads=True)


def rename(src: str, dst: str) -> None:
    """A copy and a delete (S3 has no rename), object by object for a folder."""
    from pyarrow import fs

    store, src_path = _fs_path(src)
    _, dst_path = _fs_path(dst)
    if store.get_file_info(src_path).type != fs.FileType.Directory:
        store.move(src_path, dst_path)
        return
    for info in store.get_file_info(fs.FileSelector(src_path, recursive=True)):
        if info.type == fs.FileType.File:
            store.move(info.path, dst_path + info.path[len(src_path):])
    store.delete_dir(src_path)


def remove(uri: str) -> None:
    store, path = _fs_path(uri)
    store.delete_file(path)


def rmtree(uri: str) -> None:
    store, path = _fs_path(uri)
    if exists(uri) and isdir(uri):
        store.delete_dir(path)
    elif exists(uri):
        store.delete_file(path)
