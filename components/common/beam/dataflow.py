"""Google Cloud Dataflow for the suite's Beam jobs: the settings a user gives, the pipeline
arguments of Beam's DataflowRunner, and the launch that names the job in ``gcp_resources``,
follows it to its end and cancels (batch) or drains (streaming) it when the step is stopped.

The job writes its own outputs, so the step only launches, follows and stops it. Before the
launch the step refuses, in seconds, what would fail later: missing Google credentials and a
worker image whose Python or Beam differ from the launcher's. No Beam or kfp import at module
scope: the light install reads the settings.

Following uses Dataflow's REST API (common/beam/dataflow_api.py) through the shared follower
that survives transient faults (common/platform/follow.py); open-source KFP does not cancel
remote jobs when a run is terminated, so the step does it on SIGTERM
(common/platform/signals.py).
"""

import dataclasses
import json
import logging
import os
import re
import tempfile
from typing import Callable, Dict, List

from tfkfp.components.common.beam.dataflow_api import (
    CANCEL,
    DRAIN,
    SCOPES,
    STREAMING_TYPE,
    DataflowJobs,
    JobRef,
    follow_job,
    stop_job,
)
from tfkfp.components.common.beam.dataflow_errors import DataflowError, DataflowJobError
from tfkfp.components.common.beam.dataflow_images import check_worker_image, worker_image_tag
from tfkfp.components.common.beam.dataflow_packages import suite_wheel, write_worker_requirements
from tfkfp.components.common.platform.signals import sigterm_raises

log = logging.getLogger("tfkfp")

__all__ = ["DataflowError", "DataflowJobError", "DataflowOutcome", "DataflowSettings",
           "check_worker_image", "dataflow_settings", "gcp_resources", "pipeline_args",
           "require_google_credentials", "run_on_dataflow", "suite_wheel",
           "worker_image_tag", "write_gcp_resources"]

POLL_SECONDS = 15.0
SUCCEEDED = frozenset({"JOB_STATE_DONE", "JOB_STATE_DRAINED", "JOB_STATE_UPDATED"})
# Beam's own checks (apache_beam/options/pipeline_options_validator.py): a location Beam
# rejects makes it look for a default bucket over the network instead.
_PROJECT = re.compile(r"[a-z][-a-z0-9:.]+[a-z0-9]")
_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")
_GCS = re.compile(r"gs://[a-z0-9][-_a-z0-9.]+[a-z0-9]/.*")
_JOB_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
_LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")


@dataclasses.dataclass(frozen=True)
class DataflowSettings:
    """Where and how a Dataflow job runs (``beam_options`` of a step, see
    dataflow_settings). Empty strings and 0 leave the choice to Dataflow."""

    project: str
    region: str
    temp_location: str  # gs://bucket/folder for Beam's and Dataflow's temporary files
    staging_location: str = ""  # gs://... for the staged packages (default: temp_location)
    service_account: str = ""  # the workers' identity (an email)
    machine_type: str = ""  # e.g. n2-standard-4
    max_workers: int = 0
    sdk_container_image: str = ""  # the workers' image (images/beam-worker)
    network: str = ""
    subnetwork: str = ""  # regions/REGION/subnetworks/NAME or its full URL
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)


SETTINGS = tuple(f.name for f in dataclasses.fields(DataflowSettings))
REQUIRED = ("project", "region", "temp_location")


def dataflow_settings(options: Dict[str, str]) -> DataflowSettings:
    """DataflowSettings from a step's ``beam_options`` (a KFP dict: values are strings;
    ``labels`` as ``key=value,key=value``); DataflowError on an unknown key, a missing or
    malformed setting."""
    unknown = sorted(set(options) - set(SETTINGS))
    if unknown:
        raise DataflowError(f"beam_options {unknown} do not apply to Dataflow; it takes "
                            f"{list(SETTINGS)}")
    given = {k: v for k, v in options.items() if v not in ("", None)}
    absent = [k for k in REQUIRED if k not in given]
    if absent:
        raise DataflowError(f"Dataflow needs beam_options {absent} (found {sorted(given)}); "
                            f"required: {list(REQUIRED)}")
    values = {k: str(v).strip() for k, v in given.items() if k not in ("labels",
                                                                       "max_workers")}
    _check_text(values)
    return DataflowSettings(**values, max_workers=_max_workers(given.get("max_workers", 0)),
                            labels=_labels(given.get("labels", {})))


def _check_text(values: Dict[str, str]) -> None:
    if not _PROJECT.fullmatch(values["project"]) or values["project"].isdigit():
        raise DataflowError(f"beam_options project {values['project']!r} is not a project "
                            "ID (lowercase letters, digits and hyphens, e.g. my-project)")
    if not _REGION.fullmatch(values["region"]):
        raise DataflowError(f"beam_options region {values['region']!r} is not a Dataflow "
                            "region, e.g. us-central1 or europe-west4")
    for key in ("temp_location", "staging_location"):
        if key in values and not _GCS.fullmatch(values[key]):
            raise DataflowError(f"beam_options {key} {values[key]!r} must be a Cloud "
                                "Storage folder, gs://BUCKET/FOLDER (Dataflow's workers "
                                "read and write it)")
    account = values.get("service_account", "")
    if account and "@" not in account:
        raise DataflowError(f"beam_options service_account {account!r} is not a service "
                            "account email, e.g. NAME@PROJECT.iam.gserviceaccount.com")


def _max_workers(value) -> int:
    text = str(value).strip()
    if not text.isdigit():
        raise DataflowError(f"beam_options max_workers {value!r} is not a whole number; "
                            "expected 0 (Dataflow decides) or more")
    return int(text)


def _labels(value) -> Dict[str, str]:
    if isinstance(value, dict):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        pairs = [item.partition("=")[::2] for item in str(value).split(",") if item.strip()]
    labels = {k.strip(): v.strip() for k, v in pairs}
    for key, val in labels.items():
        if not (_LABEL_KEY.fullmatch(key) and _LABEL_VALUE.fullmatch(val)):
            raise DataflowError(
                f"beam_options labels: {key}={val!r} is not a Google Cloud label; keys "
                "start with a lowercase letter, keys and values hold up to 63 lowercase "
                "letters, digits, '-' and '_' (labels='team=ml,env=prod')")
    return labels


def pipeline_args(settings: DataflowSettings, job_name: str, streaming: bool = False, *,
                  wheel: str = "") -> List[str]:
    """Beam's pipeline arguments for the DataflowRunner.

    The workers get the suite from ``sdk_container_image`` when one is given (recommended:
    they install nothing at start-up), else as the suite's wheel (``--extra_package``:
    ``wheel``, or dataflow_packages.suite_wheel's) with a ``--requirements_file`` pinning
    their packages to the launcher's versions, which they install from the package index
    when they start (``--requirements_cache=skip``: the launcher does not download
    TensorFlow to stage it). Streaming adds ``--streaming`` and
    ``--enable_streaming_engine``.
    """
    if not _JOB_NAME.fullmatch(job_name):
        raise DataflowError(f"Dataflow job name {job_name!r}: expected lowercase letters, "
                            "digits and '-', starting with a letter and not ending with '-'")
    args = ["--runner=DataflowRunner", f"--project={settings.project}",
            f"--region={settings.region}", f"--temp_location={settings.temp_location}",
            f"--job_name={job_name}"]
    optional = {"staging_location": settings.staging_location,
                "service_account_email": settings.service_account,
                "machine_type": settings.machine_type, "network": settings.network,
                "subnetwork": settings.subnetwork,
                "max_num_workers": settings.max_workers or ""}
    args += [f"--{flag}={value}" for flag, value in optional.items() if value]
    args += [f"--labels={k}={v}" for k, v in sorted(settings.labels.items())]
    args += _worker_args(settings, wheel)
    return args + (["--streaming", "--enable_streaming_engine"] if streaming else [])


def _worker_args(settings: DataflowSettings, wheel: str) -> List[str]:
    if settings.sdk_container_image:
        return [f"--sdk_container_image={settings.sdk_container_image}"]
    wheel = wheel or suite_wheel()
    requirements = write_worker_requirements(tempfile.mkdtemp(prefix="tfkfp-dataflow-"))
    return [f"--extra_package={wheel}", f"--requirements_file={requirements}",
            "--requirements_cache=skip"]


def require_google_credentials() -> "google.auth.credentials.Credentials":  # noqa: F821
    """Google's application-default credentials for Dataflow, or DataflowError at once.

    google-auth looks at GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default
    login, then the GCE/GKE metadata server (a few seconds' probe off Google Cloud;
    NO_GCE_CHECK=true skips it)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _ = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError as err:
        raise DataflowError(
            "no Google credentials to launch a Dataflow job: set GOOGLE_APPLICATION_"
            "CREDENTIALS to a service account key file, run `gcloud auth application-"
            "default login`, or run the step with a workload identity (google-auth: "
            f"{' '.join(str(err).split())[:200]})") from None
    return credentials


def gcp_resources(project: str, region: str, job_id: str) -> str:
    """``gcp_resources`` naming the job as Google Cloud Pipeline Components' Dataflow ops
    do (their GcpResources message as protobuf's MessageToJson writes it)."""
    uri = JobRef(project, region, job_id).resource_uri
    return json.dumps({"resources": [{"resourceType": "DataflowJob", "resourceUri": uri}]},
                      indent=2)


def write_gcp_resources(path: str, project: str, region: str, job_id: str) -> None:
    """Write gcp_resources at ``path`` whole or not at all (a stopped step leaves no half
    file for Vertex AI Pipelines to misread)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".gcp_resources.")
    try:
        with os.fdopen(handle, "w") as f:
            f.write(gcp_resources(project, region, job_id))
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


@dataclasses.dataclass(frozen=True)
class DataflowOutcome:
    """A launched Dataflow job: its id, its last state read (empty when not followed) and
    its page in the Cloud console."""

    job_id: str
    state: str
    console_url: str


def launch_job(pipeline) -> str:
    """Run the Beam pipeline on the DataflowRunner (it returns once the job is created)
    and return the job's id."""
    result = pipeline.run()
    if not getattr(result, "has_job", False):
        raise DataflowError("the DataflowRunner created no job (a template or dry run?); "
                            "expected pipeline options from pipeline_args")
    return result.job_id()


def run_on_dataflow(pipeline, settings: DataflowSettings, gcp_resources_path: str, *,
                    follow: bool = True, streaming: bool = False, client=None,
                    launch: Callable[[object], str] | None = None,
                    poll_seconds: float = POLL_SECONDS) -> DataflowOutcome:
    """Launch the Beam pipeline (its options from pipeline_args) on Dataflow, name the job
    in ``gcp_resources_path`` at once and, with ``follow``, wait for its end.

    DONE (or DRAINED, UPDATED) returns; FAILED or CANCELLED raise DataflowJobError naming
    the job and its console page. SIGTERM (KFP stopping the step) or an error while
    following cancels a batch job, drains a streaming one, then exits.

    Args:
        client: a DataflowJobs (tests: one on tests/fake_dataflow); default: Dataflow's
            API with application-default credentials.
        launch: runs the pipeline and returns the job id (default launch_job).
        poll_seconds: seconds between two reads of the job's state.
    """
    if client is None or launch is None:
        credentials = require_google_credentials()  # before anything is staged
        client = client or DataflowJobs(credentials)
    if settings.sdk_container_image:
        check_worker_image(settings.sdk_container_image)
    with sigterm_raises("Dataflow job"):
        job = JobRef(settings.project, settings.region, (launch or launch_job)(pipeline))
        kinds: set = set()
        try:
            write_gcp_resources(gcp_resources_path, job.project, job.region, job.job_id)
            log.info("launched Dataflow job %s: %s", job.job_id, job.console_url)
            if not follow:
                return DataflowOutcome(job.job_id, "", job.console_url)
            status = follow_job(client, job, poll_seconds,
                                seen=lambda status: kinds.add(status.get("type", "")))
        except BaseException as stopped:
            drain = streaming or STREAMING_TYPE in kinds
            ended = stop_job(client, job, DRAIN if drain else CANCEL, poll_seconds)
            if isinstance(stopped, SystemExit):
                raise SystemExit(f"{stopped}: {'drain' if drain else 'cancel'} requested "
                                 f"for Dataflow job {job.job_id} (now {ended}); "
                                 f"{job.console_url}") from None
            raise
    return _outcome(job, status)


def _outcome(job: JobRef, status: Dict) -> DataflowOutcome:
    state = status.get("currentState", "")
    if state not in SUCCEEDED:
        raise DataflowJobError(f"Dataflow job {job.job_id} ended in {state}; its logs and "
                               f"errors: {job.console_url}")
    if state == "JOB_STATE_UPDATED":
        log.info("Dataflow job %s was replaced by job %s", job.job_id,
                 status.get("replacedByJobId", "?"))
    return DataflowOutcome(job.job_id, state, job.console_url)

