"""Start a pipeline run on a Kubeflow Pipelines server through ``kfp.Client``."""

import os
import tempfile
from typing import Any, Dict

from tfkfp.pipelines import registry


class SubmitError(RuntimeError):
    """The server could not be reached or refused the run."""


def submit(name: str, parameters: Dict[str, Any], host: str, experiment: str,
           service_account: str = "", gpu=None, sizes: str = "cluster", image: str = "",
           namespace: str = "", token: str = "", cache: bool = True) -> str:
    """Compile, upload and start the pipeline; returns the run id. ``service_account`` is the
    one the steps run as (e.g. tfkfp-runner, whose RBAC lets train launch TFJobs); ``gpu``,
    ``sizes`` and ``image`` as in ``tfkfp compile``; ``namespace`` and ``token`` reach a
    multi-user installation (runs start in the profile namespace); ``cache`` False runs
    every step again."""
    import kfp

    with tempfile.TemporaryDirectory(prefix="tfkfp-submit-") as folder:
        path = registry.compile_pipeline(name, os.path.join(folder, f"{name}.yaml"), gpu,
                                         sizes, image)
        try:
            client = kfp.Client(host=host, namespace=namespace or "kubeflow",
                                existing_token=token or None)
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
