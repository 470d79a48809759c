"""Start a pipeline run on a Kubeflow Pipelines server through ``kfp.Client``."""

from typing import Any, Dict

from tfkfp.pipelines import registry


class SubmitError(RuntimeError):
    """The server could not be reached or refused the run."""


def submit(name: str, parameters: Dict[str, Any], host: str, experiment: str,
           service_account: str = "", gpu=None, sizes: str = "cluster") -> str:
    """Upload and start the pipeline; returns the run id. ``service_account`` is the one the
    steps run as (e.g. tfkfp-runner, whose RBAC lets train launch TFJobs); ``gpu`` as in
    ``tfkfp compile --gpus``; ``sizes`` as in ``tfkfp compile --sizes``."""
    import kfp

    pipeline = registry.for_cluster(name, gpu, sizes)
    try:
        client = kfp.Client(host=host)
        run = client.create_run_from_pipeline_func(pipeline, arguments=parameters,
                                                   experiment_name=experiment,
                                                   service_account=service_account or None)
    except Exception as err:  # kfp raises urllib3, ApiException and others
        raise SubmitError(f"could not start {name!r} on {host}: {_reason(err)}") from err
    return run.run_id


def _reason(err: Exception) -> str:
    status = getattr(err, "status", None)
    if status:
        return f"the server answered {status} {getattr(err, 'reason', '')}".strip()
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"{type(err).__name__}: {text} (is the host right and the server reachable?)"
