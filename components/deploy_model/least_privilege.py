"""What the kserve target's predictor may be and do: its image (runtime tfkfp) or TF Serving
version (runtime tfserving) and its service account only from the namespace's allow-list
(ConfigMap tfkfp-config, keys servingImages, servingRuntimeVersions and
servingServiceAccounts: common/platform/allowlist.py), checked before anything is published or
created; the vertex target's serving image likewise (servingImages). No service-account
token; non-root with no capabilities, no privilege escalation, the runtime's default seccomp
profile and a read-only root filesystem, with an emptyDir at /tmp for what it writes. Who may
reach it is network_policy.py's part."""

import copy
import os
from typing import Any, Dict, List

from tfkfp.components._image import step_image
from tfkfp.components.common.platform import allowlist, kube_api
from tfkfp.components.deploy_model.errors import DeployConfigError
from tfkfp.components.deploy_model.options import DEFAULT_TFSERVING_VERSION, DeployOptions

# The predictor's container, either runtime: the suite's image and KServe's TF Serving runtime
# both run as 1000. The seccomp profile is set here too: Knative, by default, refuses a
# pod-level securityContext.
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                      "readOnlyRootFilesystem": True, "runAsNonRoot": True, "runAsUser": 1000,
                      "runAsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
# Standard mode: every container of the pod, KServe's storage initializer included (its image
# runs as 1000 too).
POD_SECURITY = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
# The one writable place under the read-only root: `tfkfp serve` itself writes nothing, but
# Python's and TensorFlow's temporary files go there, and libraries' caches under HOME.
SCRATCH_VOLUME = "tfkfp-tmp"
SCRATCH = "/tmp"
# deploy_options field -> the tfkfp-config key listing what the namespace allows for it
# (manifests/base/tfkfp-config.yaml).
ALLOWLIST_KEYS = {"image": "servingImages", "service_account": "servingServiceAccounts",
                  "tfserving_version": "servingRuntimeVersions"}


def pod_settings(options: DeployOptions) -> Dict[str, Any]:
    """The predictor's pod fields: its account without a token, the scratch volume and, in
    standard mode, the pod's security context (Knative refuses one unless its admin enabled
    kubernetes.podspec-securitycontext)."""
    pod: Dict[str, Any] = {"serviceAccountName": options.service_account,
                           "automountServiceAccountToken": False,
                           "volumes": [{"name": SCRATCH_VOLUME, "emptyDir": {}}]}
    if options.mode == "standard":
        pod["securityContext"] = copy.deepcopy(POD_SECURITY)
    return pod


def container_settings() -> Dict[str, Any]:
    """The serving container's security context and scratch mount."""
    return {"securityContext": copy.deepcopy(CONTAINER_SECURITY),
            "volumeMounts": [{"name": SCRATCH_VOLUME, "mountPath": SCRATCH}]}


def scratch_env() -> List[Dict[str, str]]:
    """HOME on the scratch volume: the image's home is under the read-only root."""
    return [{"name": "HOME", "value": SCRATCH}]


def predictor_allowlist() -> allowlist.AllowList:
    """What deploy_options may pick for the predictor; without the ConfigMap only this
    step's image, the suite's TF Serving version and tfkfp-serving. A ConfigMap written
    before servingRuntimeVersions existed allows only the suite's TF Serving version."""
    return allowlist.AllowList(
        "deploy_options", "the predictors'", ALLOWLIST_KEYS,
        {"image": [step_image()], "service_account": [DeployOptions().service_account],
         "tfserving_version": [DEFAULT_TFSERVING_VERSION]},
        DeployConfigError, optional=("tfserving_version",))


def code_values(target: str, options: DeployOptions) -> Dict[str, str]:
    """The deploy options that pick the code the predictor runs, by target and runtime: the
    image (kserve's tfkfp runtime, vertex) or TF Serving's version (kserve's tfserving
    runtime, whose image comes from KServe's ServingRuntime, an admin's object)."""
    if target == "kserve" and options.runtime == "tfserving":
        return {"tfserving_version": options.tfserving_version}
    return {"image": options.image} if target in ("kserve", "vertex") else {}


def check_allowed(options: DeployOptions, namespace: str, api=None) -> None:
    """Refuse a kserve predictor's image or TF Serving version, or its service account,
    that the namespace's allow-list does not name."""
    values = {"service_account": options.service_account, **code_values("kserve", options)}
    allowlist.check_allowed(predictor_allowlist(), values, namespace, api)


def check_vertex_allowed(options: DeployOptions, api=None) -> None:
    """Refuse a vertex serving image that the allow-list does not name: that of the
    namespace this step's pod runs in when it runs on Kubernetes (or ``api`` is given);
    elsewhere (Vertex AI Pipelines, a laptop), with no admin's list to read, only the
    step's own image."""
    values = code_values("vertex", options)
    if api is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        allowed = predictor_allowlist().defaults["image"]
        if values["image"] not in allowed:
            raise DeployConfigError(
                f"deploy_options image {values['image']!r} is not allowed for target "
                f"'vertex' outside a cluster; allowed: {', '.join(allowed)} (this step's "
                "own image: with no Kubernetes namespace there is no ConfigMap "
                f"{allowlist.CONFIG_MAP} to list others)")
        return
    allowlist.check_allowed(predictor_allowlist(), values, kube_api.default_namespace(), api)
