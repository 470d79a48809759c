"""What the kserve target's predictor may be and do: its image and service account only from
the namespace's allow-list (ConfigMap tfkfp-config, keys servingImages and
servingServiceAccounts: common/platform/allowlist.py), checked before anything is published or
created; no service-account token; non-root with no capabilities, no privilege escalation,
the runtime's default seccomp profile and a read-only root filesystem, with an emptyDir at
/tmp for what it writes. Who may reach it is network_policy.py's part."""

import copy
from typing import Any, Dict, List

from tfkfp.components._image import step_image
from tfkfp.components.common.platform import allowlist
from tfkfp.components.deploy_model.errors import DeployConfigError
from tfkfp.components.deploy_model.options import DeployOptions

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
ALLOWLIST_KEYS = {"image": "servingImages", "service_account": "servingServiceAccounts"}


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
    step's image and tfkfp-serving."""
    return allowlist.AllowList(
        "deploy_options", "the predictors'", ALLOWLIST_KEYS,
        {"image": [step_image()], "service_account": [DeployOptions().service_account]},
        DeployConfigError)


def check_allowed(options: DeployOptions, namespace: str, api=None) -> None:
    """Refuse a predictor image or service account that the namespace's allow-list does not
    name. The image only for runtime tfkfp: TF Serving's comes from KServe's ServingRuntime,
    an admin's object."""
    values = {"service_account": options.service_account}
    if options.runtime == "tfkfp":
        values["image"] = options.image
    allowlist.check_allowed(predictor_allowlist(), values, namespace, api)
