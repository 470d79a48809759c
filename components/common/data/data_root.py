"""Where a Dataset's shards are kept: inside its artifact, or in a data root on the object
store, the artifact then holding only schema.json and manifest.json.

On an open-source Kubeflow backend the KFP launcher downloads every input artifact into the
step's pod before the step runs, and uploads every output after. A Dataset that holds its
shards is moved by every step that takes it, and needs the pod's disk for all of it. Shards
in a data root are written once, by the step that shards, straight to the store; every later
step downloads a few kilobytes of manifest and streams the shards it reads from the store
(gs:// natively, s3:// and minio:// through the fetch cache). Each Dataset gets its own
folder, named after its artifact's URI, so reruns and cached steps never share or remove
each other's shards (a retried step rewrites its own folder).

``data_root`` values:
- ``auto`` (default): beside the artifact (``<artifact URI>-shards``) when the artifact is
  on an object store the step can write (gs://, or s3:// / minio:// with S3 credentials in
  the environment); otherwise inside the artifact (the local runner, or a store without
  credentials, where the launcher moves the bytes).
- ``inside``: always inside the artifact.
- a path or URI (``s3://bucket/tfkfp-data``, ``gs://...``): ``<data_root>/<digest>/``.
  A relative path is taken from the working folder (where ``tfkfp run`` was started, and
  where its local tasks run) and may not leave it (``../..`` is refused, naming where the
  shards would have gone); the step resolves it once, so the manifest lists the shards by
  absolute path and every reader finds them.
"""

import hashlib
import os

from tfkfp.components.common.platform import object_store, uris

AUTO = "auto"
INSIDE = "inside"
_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


class DataRootError(ValueError):
    """A data_root the shards cannot be written to, named with the values that work."""


def check(data_root: str) -> None:
    """Refuse a data_root no step can write (no TensorFlow, no store access)."""
    if data_root not in ("", AUTO, INSIDE):
        resolved(data_root)


def resolved(data_root: str) -> str:
    """A data_root path or URI as the shards' parent folder (see the module docstring)."""
    reason = uris.unsupported_scheme(data_root)
    if reason:
        raise DataRootError(f"data_root {reason}, or {AUTO!r} or {INSIDE!r}")
    try:
        return uris.resolve_setting("data_root", data_root)
    except uris.PlaceError as err:
        raise DataRootError(f"{err}; or {AUTO!r} or {INSIDE!r}") from err


def shard_dir(data_root: str, artifact_uri: str) -> str:
    """The folder for the shards of the Dataset artifact at ``artifact_uri`` ("" for inside
    the artifact)."""
    if data_root in ("", INSIDE):
        return ""
    if data_root == AUTO:
        return f"{artifact_uri.rstrip('/')}-shards" if writable_store(artifact_uri) else ""
    digest = hashlib.sha256(artifact_uri.encode("utf-8")).hexdigest()[:20]
    return uris.join(resolved(data_root), digest)


def writable_store(uri: str) -> bool:
    """Whether uri is on an object store this step can write to directly."""
    if uri.startswith("gs://"):
        return True  # TensorFlow's GCS filesystem takes the pod's credentials
    if object_store.handles(uri):
        return any(os.environ.get(name) for name in _CREDENTIALS)
    return False
