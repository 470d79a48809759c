"""Where the engine reads the model from. TF Serving loads ``<base>/<version>/saved_model.pb``
and serves the highest version, so a SavedModel for it is published into a new numbered
folder; ``tfkfp serve`` reads a folder as it is, published the same way when asked to
(``storage_uri``), else straight from the model artifact."""

import logging
import time

from tfkfp.components.common.model import bundle
from tfkfp.components.common.platform import uris
from tfkfp.components.deploy_model.errors import DeployConfigError

log = logging.getLogger("tfkfp")



def model_kind(model_uri: str) -> str:
    """savedmodel or tflite (a bundle from export_tflite, common.model.bundle); refuse
    anything else."""
    if not uris.exists(model_uri):
        raise DeployConfigError(f"model {model_uri} does not exist")
    kind = bundle.kind_of(model_uri)
    if not kind:
        raise DeployConfigError(bundle.neither(model_uri))
    return kind


def next_version(base: str) -> int:
    """A version above every numbered folder under ``base`` (seconds since 1970 when that is
    higher, so versions also say when)."""
    taken = [int(n.strip("/")) for n in (uris.listdir(base) if uris.isdir(base) else [])
             if n.strip("/").isdigit()]
    return max([int(time.time()), *(v + 1 for v in taken)])


def publish(model_uri: str, base: str) -> str:
    """Copy the model into a new version folder under ``base`` (written under a temporary
    name, then renamed) and return that folder."""
    version = next_version(base)
    target = uris.join(base, str(version))
    uris.makedirs(base)
    uris.copy_tree(model_uri, target)
    log.info("published %s as version %d: %s", model_uri, version, target)
    return target


def kserve_storage_uri(model_path: str, model_uri: str, kind: str, runtime: str,
                       storage_uri: str) -> str:
    """The InferenceService's storageUri: TF Serving's base folder (after publishing a new
    version into it from ``model_path``), or the folder ``tfkfp serve`` downloads."""
    if runtime == "tfserving":
        if kind != bundle.SAVEDMODEL:
            raise DeployConfigError(f"runtime 'tfserving' serves SavedModels; {model_uri} is a "
                                    "TFLite bundle (use runtime 'tfkfp')")
        if not storage_uri:
            raise DeployConfigError("runtime 'tfserving' needs deploy_options storage_uri: "
                                    "the folder of numbered versions TF Serving loads, e.g. "
                                    "gs://bucket/models/NAME")
        publish(model_path, storage_uri)
        return storage_uri
    return publish(model_path, storage_uri) if storage_uri else engine_uri(model_uri)


def engine_uri(uri: str) -> str:
    """A KFP artifact URI as KServe's storage initializer reads it: KFP's MinIO store is S3
    (the service account's credentials name the endpoint)."""
    return "s3://" + uri[len("minio://"):] if uri.startswith("minio://") else uri
