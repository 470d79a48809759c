"""The namespace's allow-list of what a run may pick for the pods tfkfp's steps create: the
``tfkfp-config`` ConfigMap (manifests/base/tfkfp-config.yaml), one value a line under each key.
Train's cluster launchers check their replicas' image and service account against it,
deploy_model its predictor's service account and whatever picks the code it serves (the image,
TF Serving's runtime version), before anything is created: the steps' account
may create pods that run anything as anyone, so a run may pick only what the cluster's admin
listed.

Entries match exactly, as the admission policy (manifests/policy) compares them: an image by
digest (``repo@sha256:...``) passes only when that digest form is listed, never through its
repository's tag."""

import dataclasses
from typing import Dict, List, Tuple, Type

from tfkfp.components.common.platform.kube_api import api_client, api_message

CONFIG_MAP = "tfkfp-config"


@dataclasses.dataclass(frozen=True)
class AllowList:
    """Which of a step's options the ConfigMap governs, and how the step names them."""

    options: str  # the step parameter the values come from, e.g. "launcher_options"
    whose: str  # whose values they are, in messages: e.g. "the replicas'"
    keys: Dict[str, str]  # option field -> the ConfigMap key listing its allowed values
    defaults: Dict[str, List[str]]  # option field -> what is allowed without the ConfigMap
    error: Type[Exception]  # what a refusal raises: the step's own configuration error
    # fields whose key a ConfigMap may lack (added after ConfigMaps were written): a missing
    # one allows only the field's defaults, where another missing key allows nothing
    optional: Tuple[str, ...] = ()


def allowed_values(allow: AllowList, namespace: str, api=None) -> Dict[str, List[str]]:
    """The namespace's allowed values by option field: the ConfigMap's lists (a missing key
    allows nothing, or an ``allow.optional`` field's defaults), or only ``allow.defaults``
    without one."""
    from kubernetes import client

    api = api or api_client()
    try:
        config_map = client.CoreV1Api(api).read_namespaced_config_map(CONFIG_MAP, namespace)
    except client.ApiException as err:
        if err.status == 404:
            return {field: list(allow.defaults[field]) for field in allow.keys}
        raise allow.error(
            f"cannot read {allow.whose} allow-list, ConfigMap {namespace}/{CONFIG_MAP}: "
            f"{err.status} {err.reason}: {api_message(err)}. The runner's Role "
            "(manifests/base/rbac.yaml) grants get on it") from err
    data = config_map.data or {}
    return {field: list(allow.defaults[field]) if key not in data and field in allow.optional
            else _listed(data.get(key, "")) for field, key in allow.keys.items()}


def _listed(text: str) -> List[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_allowed(allow: AllowList, values: Dict[str, str], namespace: str,
                  api=None) -> None:
    """Refuse a value (by option field) that the namespace's allow-list does not name."""
    allowed = allowed_values(allow, namespace, api)
    for field, value in values.items():
        if value not in allowed[field]:
            listed = ", ".join(allowed[field]) or "none"
            raise allow.error(
                f"{allow.options} {field} {value!r} is not allowed in namespace "
                f"{namespace!r}; allowed: {listed} (ConfigMap {CONFIG_MAP}, key "
                f"{allow.keys[field]}, which the cluster's admin maintains)")
