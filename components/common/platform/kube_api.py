"""The Kubernetes API as the steps that create resources (train's tfjob and trainjob
launchers, deploy_model's kserve target) reach it: the pod's own service account in a
cluster, the kubeconfig elsewhere, and the API server's own words when it refuses."""

import contextlib
import logging
import os
from typing import Iterator

# The API server's words when it refuses (api_message) are read beside describe_error, which
# follow's messages use too; both are importable here.
from tfkfp.components.common.platform.follow import api_message, describe_error  # noqa: F401

DEFAULT_NAMESPACE = "tfkfp"  # manifests/base/namespace.yaml
POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def api_client():
    """In a pod, its service account; elsewhere the kubeconfig (KUBECONFIG or ~/.kube)."""
    from kubernetes import client, config

    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
    else:
        # Read KUBECONFIG now: the client reads it once, when it is first imported.
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return client.ApiClient()


def default_namespace() -> str:
    """The namespace this pod runs in, else tfkfp (manifests/base)."""
    try:
        with open(POD_NAMESPACE_FILE) as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


@contextlib.contextmanager
def undoing(what: str, log: logging.Logger, missing_ok: bool = True) -> Iterator[None]:
    """Undo a step's work while its own error is on its way: a failure here is logged
    ("could not WHAT: why"), never raised, so the step's error is the one that surfaces; with
    ``missing_ok`` a 404 (already gone) is no failure."""
    from kubernetes import client

    try:
        yield
    except client.ApiException as err:
        if err.status != 404 or not missing_ok:
            log.warning("could not %s: %s", what, err.reason)
    except Exception as err:  # noqa: BLE001 - the step's own error is on its way: keep it
        log.warning("could not %s: %s", what, describe_error(err))
