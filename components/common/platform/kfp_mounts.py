"""Where KFP puts an object-store artifact inside a step, and back: one table, both ways.

KFP's launcher gives a step each artifact at a local path made from the artifact's URI
(``gs://b/k`` at ``/gcs/b/k``, ``minio://b/k`` at ``/minio/b/k``, ``s3://b/k`` at
``/s3/b/k``; kfp's ``dsl/types/artifact_types``: ``_GCS_LOCAL_MOUNT_PREFIX`` ... and
``RemotePrefix``). Such a path names an object every machine reaches, so a job that runs
elsewhere (train's cluster replicas, tune's trials) is given the URI rather than a copy.

The table is written here, not read from kfp: code outside component.py never imports kfp
(tests/test_boundaries.py). tests/components/common/test_kfp_mount_paths.py holds it to
kfp's constants and to kfp's own conversion, so a prefix kfp adds fails that test until it
has its entry here (or in ``NOT_SHARED``).
"""

from typing import Dict

# mount prefix -> URI scheme, for the stores whose URIs the suite reads (uris.SUPPORTED_SCHEMES)
MOUNTS: Dict[str, str] = {"/gcs/": "gs://", "/minio/": "minio://", "/s3/": "s3://"}

# KFP prefixes that do not name a shared object: ``/oci/`` holds a model image pulled from a
# registry, its reference flattened into one folder name ("/" -> "_"), and the suite reads
# no ``oci://`` URI. A path under them is this step's own, staged like any local path.
NOT_SHARED: Dict[str, str] = {"/oci/": "oci://"}


def uri_of(path: str) -> str | None:
    """The URI behind a KFP mount path (``/minio/b/k`` -> ``minio://b/k``); None for any
    other path."""
    for prefix, scheme in MOUNTS.items():
        if path.startswith(prefix):
            return scheme + path[len(prefix):]
    return None


def path_of(uri: str) -> str | None:
    """The local path KFP mounts ``uri`` at inside a step (``s3://b/k`` -> ``/s3/b/k``);
    None for a URI of a scheme KFP does not mount."""
    for prefix, scheme in MOUNTS.items():
        if uri.startswith(scheme):
            return prefix + uri[len(scheme):]
    return None
