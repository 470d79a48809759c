"""Object-store access for the steps' pods, set at compile time (``--store-secret``).

On an open-source Kubeflow backend the KFP launcher reads the artifact store with the
``mlpipeline-minio-artifact`` secret, but the step's own code gets no credentials. A step
that reads ``s3://``/``minio://`` input, or writes shards to a data root beside its artifact
(``data_root=auto``), needs them: this puts the secret's keys into every step's environment
as ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (KFP's ``secretAsEnv`` platform setting,
what ``kfp.kubernetes.use_secret_as_env`` writes, marked optional so a namespace without the
secret still runs, keeping shards inside the artifacts) and, where given, the store's
endpoint as ``AWS_ENDPOINT_URL``.
"""

import copy
import dataclasses
import re

from google.protobuf import json_format, struct_pb2

KFP_SECRET = "mlpipeline-minio-artifact"
ACCESS_KEY_KEY, SECRET_KEY_KEY = "accesskey", "secretkey"  # as KFP's secret names them
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class StoreAccessError(ValueError):
    """A secret name or endpoint no pod could use, named with what would work."""


@dataclasses.dataclass(frozen=True)
class StoreAccess:
    secret: str = KFP_SECRET
    endpoint: str = ""  # e.g. http://minio-service.kubeflow:9000; "" keeps the default

    def __post_init__(self):
        if not _SECRET_NAME.match(self.secret):
            raise StoreAccessError(f"store secret {self.secret!r} is not a Kubernetes Secret "
                                   f"name (lower case letters, digits, '-' and '.'); e.g. "
                                   f"{KFP_SECRET}")
        if self.endpoint and not re.match(r"^https?://[^/\s]+/?$", self.endpoint):
            raise StoreAccessError(f"store endpoint {self.endpoint!r} is not a URL such as "
                                   "http://minio-service.kubeflow:9000")


def with_store_access(pipeline, access: StoreAccess):
    """A copy of the compiled pipeline whose every container step gets the store's keys
    (and endpoint) in its environment."""
    out = copy.deepcopy(pipeline)
    executors = out.pipeline_spec.deployment_spec["executors"]
    kubernetes = out.platform_spec.platforms["kubernetes"].deployment_spec.executors
    for label in list(executors.keys()):
        if "container" not in executors[label]:
            continue  # importers run in KFP's driver
        config = json_format.MessageToDict(kubernetes[label]) if label in kubernetes else {}
        config.setdefault("secretAsEnv", []).append({
            "secretName": access.secret, "optional": True,
            "keyToEnv": [{"secretKey": ACCESS_KEY_KEY, "envVar": "AWS_ACCESS_KEY_ID"},
                         {"secretKey": SECRET_KEY_KEY, "envVar": "AWS_SECRET_ACCESS_KEY"}]})
        struct = struct_pb2.Struct()
        struct.update(config)
        kubernetes[label].CopyFrom(struct)
        if access.endpoint:
            container = json_format.MessageToDict(executors[label]["container"])
            container.setdefault("env", []).append({"name": "AWS_ENDPOINT_URL",
                                                    "value": access.endpoint.rstrip("/")})
            executors[label]["container"] = container
    return out
