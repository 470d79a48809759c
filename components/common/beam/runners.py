"""Where a Beam job runs: one table entry per runner, the settings each takes, and the
pipeline options built from them. Checking a request imports no Beam, so a pipeline's
parameters are refused before a run starts on the light install.

- ``direct``: in this process, on Beam's FnApiRunner for a batch (named, so no run waits on
  the DirectRunner's attempt to download its Prism binary) and BundleBasedDirectRunner for
  a stream. Settings: ``direct_num_workers``.
- ``dataflow``: Google Cloud Dataflow (``common.beam.dataflow``: project, region,
  temp_location, ...); the step launches the job, follows it and cancels it when stopped.
- ``portable``: a Flink or Spark cluster's Beam job server (``job_endpoint``, e.g.
  ``flink-jobserver:8099``); workers run in ``environment_type`` (``DOCKER`` with the
  suite's worker image in ``environment_config``, or ``EXTERNAL``/``PROCESS``).
"""

import dataclasses
from typing import Callable, Dict, List, Tuple


class BeamSettingsError(ValueError):
    """A runner or runner setting that cannot work; the message names it and what is
    allowed."""


@dataclasses.dataclass(frozen=True)
class BeamRunner:
    name: str
    batch: str  # Beam's runner for a bounded job
    streaming: str  # and for an unbounded one
    settings: Tuple[str, ...]  # the keys of beam_options it takes
    required: Tuple[str, ...] = ()
    remote: bool = False  # the job runs elsewhere: the step launches and follows it
    args: Callable[[Dict[str, str], str, bool], List[str]] | None = None


def _direct_args(settings: Dict[str, str], job_name: str, streaming: bool) -> List[str]:
    workers = settings.get("direct_num_workers", "1")
    return [f"--direct_num_workers={workers}", "--direct_running_mode=in_memory"] \
        if not streaming else []


def _portable_args(settings: Dict[str, str], job_name: str, streaming: bool) -> List[str]:
    args = [f"--job_endpoint={settings['job_endpoint']}", f"--job_name={job_name}"]
    for key in ("environment_type", "environment_config", "artifact_endpoint"):
        if settings.get(key):
            args.append(f"--{key}={settings[key]}")
    return args + (["--streaming"] if streaming else [])


def _dataflow_args(settings: Dict[str, str], job_name: str, streaming: bool) -> List[str]:
    from tfkfp.components.common.beam import dataflow

    # first: Beam's own option checks reach for Cloud Storage with credentials, retrying
    # for minutes without them
    dataflow.require_google_credentials()
    return dataflow.pipeline_args(dataflow.dataflow_settings(settings), job_name, streaming)


RUNNERS: Dict[str, BeamRunner] = {r.name: r for r in (
    BeamRunner("direct", "FnApiRunner", "BundleBasedDirectRunner",
               ("direct_num_workers",), args=_direct_args),
    BeamRunner("dataflow", "DataflowRunner", "DataflowRunner", (), remote=True,
               args=_dataflow_args),
    BeamRunner("portable", "PortableRunner", "PortableRunner",
               ("job_endpoint", "environment_type", "environment_config",
                "artifact_endpoint"), required=("job_endpoint",), remote=True,
               args=_portable_args),
)}


def runner_of(name: str) -> BeamRunner:
    if name not in RUNNERS:
        raise BeamSettingsError(f"beam_runner {name!r} is not one of {sorted(RUNNERS)} (or "
                                "empty: predict in the step)")
    return RUNNERS[name]


def check_runner(name: str, settings: Dict[str, str]) -> BeamRunner:
    """Refuse an unknown runner, a setting it does not take or a missing required one."""
    runner = runner_of(name)
    if runner.name == "dataflow":
        from tfkfp.components.common.beam import dataflow

        dataflow.dataflow_settings(settings)  # refuses what Dataflow cannot take
        return runner
    unknown = sorted(set(settings) - set(runner.settings))
    if unknown:
        raise BeamSettingsError(f"beam_options {unknown} do not apply to beam_runner "
                                f"{name!r}; it takes {list(runner.settings)}")
    absent = [k for k in runner.required if not settings.get(k)]
    if absent:
        raise BeamSettingsError(f"beam_runner {name!r} needs beam_options {absent}")
    workers = settings.get("direct_num_workers", "1")
    if not workers.isdigit() or int(workers) < 1:
        raise BeamSettingsError(f"beam_options direct_num_workers {workers!r}: expected a "
                                "whole number of at least 1")
    return runner


def pipeline_options(name: str, settings: Dict[str, str], job_name: str,
                     streaming: bool = False):
    """Beam PipelineOptions for the runner, its settings checked."""
    from apache_beam.options.pipeline_options import PipelineOptions

    runner = check_runner(name, settings)
    chosen = runner.streaming if streaming else runner.batch
    args = [f"--runner={chosen}", *runner.args(settings, job_name, streaming)]
    if streaming:
        args.append("--streaming")
    return PipelineOptions(sorted(set(args), key=args.index))


def run_pipeline(pipeline, name: str, settings: Dict[str, str],
                 gcp_resources_path: str = "") -> None:
    """Run a built pipeline on the runner to its end. Dataflow's job is launched, written to
    ``gcp_resources_path`` (Vertex AI Pipelines' link and cancel), followed, and cancelled
    when the step is stopped; a local or portable job is waited for here."""
    if name == "dataflow":
        from tfkfp.components.common.beam import dataflow

        dataflow.run_on_dataflow(pipeline, dataflow.dataflow_settings(settings),
                                 gcp_resources_path)
        return
    result = pipeline.run()
    state = result.wait_until_finish()
    if str(state).rsplit(".", 1)[-1] not in ("DONE", "None"):
        raise RuntimeError(f"the Beam job on {name} ended {state}, not DONE")
