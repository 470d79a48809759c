"""Start a pipeline run on a Kubeflow Pipelines server through ``kfp.Client``."""

import os
import tempfile
from typing import Any, Dict, Tuple

from tfkfp.pipelines import registry

# The KFP API endpoint when none is given, as kfp.Client and KFP's own CLI read it.
ENDPOINT_ENV = "KF_PIPELINES_ENDPOINT"
TOKEN_ENV = "TFKFP_KFP_TOKEN"  # a bearer token, kept off the command line
# kfp.Client's own: a file holding the token (a projected service-account token, which the
# kubelet rotates), and where Kubeflow's PodDefault mounts one when the variable is unset.
TOKEN_PATH_ENV = "KF_PIPELINES_SA_TOKEN_PATH"
DEFAULT_TOKEN_PATH = "/var/run/secrets/kubeflow/pipelines/token"


class SubmitError(RuntimeError):
    """The server could not be reached or refused the run."""


def authentication(token: str = "", token_file: str = "") -> Dict[str, Any]:
    """The ``kfp.Client`` arguments that authenticate the run, from the first that is set:
    ``token``, ``token_file``, ``$TFKFP_KFP_TOKEN``, ``$KF_PIPELINES_SA_TOKEN_PATH``, or the
    token Kubeflow mounts in a notebook or pipeline pod. A file is read again before each
    request, so a rotated service-account token keeps working."""
    if not token and not token_file:
        token = os.environ.get(TOKEN_ENV, "")
    if token:
        return {"existing_token": token}
    found = _token_file(token_file)
    if not found:
        return {}
    _check_token_file(*found)
    from kfp.client import ServiceAccountTokenVolumeCredentials

    return {"credentials": ServiceAccountTokenVolumeCredentials(found[0])}


def _token_file(token_file: str) -> Tuple[str, str] | None:
    """(path, where it was named), or None: a path named explicitly must be readable, the
    default mount is used only where it exists."""
    if token_file:
        return token_file, "--token-file"
    if os.environ.get(TOKEN_PATH_ENV):
        return os.environ[TOKEN_PATH_ENV], f"${TOKEN_PATH_ENV}"
    if os.path.isfile(DEFAULT_TOKEN_PATH):
        return DEFAULT_TOKEN_PATH, "Kubeflow's token mount"
    return None


def _check_token_file(path: str, source: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            empty = not f.read().strip()
    except OSError as err:
        raise SubmitError(f"cannot read the KFP API token file {path!r} ({source}): "
                          f"{err.strerror or err}") from err
    if empty:
        raise SubmitError(f"the KFP API token file {path!r} ({source}) is empty")


def submit(name: str, parameters: Dict[str, Any], host: str, experiment: str,
           service_account: str = "", gpu=None, sizes: str = "cluster", image: str = "",
           namespace: str = "", token: str = "", cache: bool = True,
           token_file: str = "", store=None) -> str:
    """Compile, upload and start the pipeline; returns the run id. ``service_account`` is the
    one the steps run as (e.g. tfkfp-runner, whose RBAC lets train launch TFJobs); ``gpu``,
    ``sizes`` and ``image`` as in ``tfkfp compile``; ``namespace`` and a token (``token``,
    ``token_file`` or the environment: see ``authentication``) reach a multi-user
    installation (runs start in the profile namespace); ``cache`` False runs every step
    again; ``store`` as in ``tfkfp compile --store-secret``."""
    import kfp

    auth = authentication(token, token_file)
    with tempfile.TemporaryDirectory(prefix="tfkfp-submit-") as folder:
        path = registry.compile_pipeline(name, os.path.join(folder, f"{name}.yaml"), gpu,
                                         sizes, image, store)
        try:
            client = kfp.Client(host=host, namespace=namespace or "kubeflow", **auth)
            run = client.create_run_from_pipeline_package(
                path, arguments=parameters, experiment_name=experiment,
                namespace=namespace or None, service_account=service_account or None,
                enable_caching=None if cache else False)
        except Exception as err:  # kfp raises urllib3, ApiException and others
            raise SubmitError(f"could not start {name!r} on {host}: {_reason(err)}") from err
    return run.run_id


def _reason(err: Exception) -> str:
    status = getattr(err, "status", None)
    if status:
        return f"the server answered {status} {getattr(err, 'reason', '')}".strip()
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"{type(err).__name__}: {text} (is the host right and the server reachable?)"
