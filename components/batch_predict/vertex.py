"""Managed batch prediction on Vertex AI: upload the SavedModel, run a BatchPredictionJob.

``build_requests`` is a plain function that returns the two requests (``UploadModelRequest``
and ``CreateBatchPredictionJobRequest`` of ``google.cloud.aiplatform_v1``) without touching
the network, so tests check exactly what would be sent. ``submit`` sends them with the
GAPIC clients of ``google-cloud-aiplatform`` against the region's endpoint, waits for the
upload, creates the job, names it in ``gcp_resources`` and (optionally) waits for it to
finish, cancelling it if the step is cancelled meanwhile.

The tfkfp SavedModel's ``serving_default`` signature takes serialized ``tf.train.Example``
strings, which is what Vertex sends a TensorFlow serving container for ``tf-record``
input (each record base64-encoded), so the shards from shard_tfrecords are the input as
they are: ``serving_default`` reads one feature per column and the ``packed`` layout that
shard_tfrecords writes for the model's own feature columns. Shards of a table with other
numeric feature columns than the model's (or for a model exported before the packed
layout existed) are sharded with ``layout="columns"``. Shards in the ``blocks`` layout hold
many rows per record, which Vertex would send as one instance: they are refused before
anything is uploaded (``check_record_layout``).
"""

import dataclasses
import logging
import re
from typing import Dict, List, Sequence

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common.data.schema import SCHEMA_FILE, Schema
from tfkfp.components.common.platform import uris, vertex_jobs
from tfkfp.components.common.platform.follow import follow

log = logging.getLogger("tfkfp")

# Vertex's prebuilt TensorFlow serving image; set serving_image for a newer one.
SERVING_IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-17:latest"
INSTANCE_FORMATS = ("tf-record", "tf-record-gzip", "jsonl", "csv", "file-list")
PREDICTION_FORMATS = ("jsonl", "csv", "bigquery")


@dataclasses.dataclass(frozen=True)
class VertexJob:
    """Everything a Vertex AI batch prediction needs; see build_requests."""

    project: str
    region: str
    model_uri: str  # gs:// folder of the SavedModel
    input_uris: Sequence[str]  # gs:// files or patterns
    output_uri_prefix: str  # gs:// folder for the predictions
    display_name: str = "tfkfp-batch-predict"
    instances_format: str = "tf-record"
    predictions_format: str = "jsonl"
    machine_type: str = "n1-standard-4"
    starting_replica_count: int = 1
    max_replica_count: int = 4
    batch_size: int = 0  # records per request to the model (0: Vertex's default, 64)
    accelerator_type: str = ""  # e.g. NVIDIA_TESLA_T4
    accelerator_count: int = 0
    serving_image: str = SERVING_IMAGE
    service_account: str = ""
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    @property
    def endpoint(self) -> str:
        return f"{self.region}-aiplatform.googleapis.com"


def check(job: VertexJob) -> None:
    """Fail with a clear message on options Vertex would reject later."""
    gcs = [("model_uri", job.model_uri), ("output_uri_prefix", job.output_uri_prefix)] + \
        [("input_uris", u) for u in job.input_uris]
    for name, uri in gcs:
        if not uri.startswith("gs://"):
            raise PredictInputError(f"Vertex batch prediction: {name} {uri!r} must be a gs:// "
                                    "URI (Vertex reads and writes Cloud Storage)")
    if not job.input_uris:
        raise PredictInputError("Vertex batch prediction: input_uris is empty")
    if job.instances_format not in INSTANCE_FORMATS:
        raise PredictInputError(f"instances_format {job.instances_format!r} is not one of "
                                f"{INSTANCE_FORMATS}")
    if job.predictions_format not in PREDICTION_FORMATS:
        raise PredictInputError(f"predictions_format {job.predictions_format!r} is not one "
                                f"of {PREDICTION_FORMATS}")
    if not 1 <= job.starting_replica_count <= job.max_replica_count:
        raise PredictInputError(
            f"replica counts: starting {job.starting_replica_count}, max "
            f"{job.max_replica_count}; expected 1 <= starting_replica_count <= max")
    if bool(job.accelerator_type) != (job.accelerator_count > 0):
        raise PredictInputError("accelerator_type and accelerator_count go together: got "
                                f"{job.accelerator_type!r} x {job.accelerator_count}")
    if not re.fullmatch(r"[a-z][-a-z0-9]*", job.region):
        raise PredictInputError(f"region {job.region!r} is not a Vertex region, e.g. us-central1")


def check_record_layout(input_uris: Sequence[str]) -> None:
    """Refuse shards whose Dataset's schema.json (beside the shards or one folder up) says
    ``blocks``: Vertex sends each record to ``serving_default`` as one instance. Storage
    this step cannot read is not checked (said in the log): Vertex reads it with its own
    access."""
    for uri in input_uris:
        folder = uri.rstrip("/")
        for _ in range(3):  # the URI itself, the folder of a shard, and the Dataset's
            path = uris.join(folder, SCHEMA_FILE)
            schema = _readable_schema(path)
            if schema is not None:
                if schema.record_layout.multi_row:
                    raise PredictInputError(
                        f"Vertex batch prediction: {uri} is sharded in the "
                        f"{schema.layout!r} layout ({path}), several rows per record, but "
                        "Vertex sends each record to serving_default as one instance; shard "
                        "it with layout='packed' or 'columns', or use batch_predict, which "
                        "reads every layout")
                break
            folder = folder.rsplit("/", 1)[0]


def _readable_schema(path: str) -> Schema | None:
    try:
        return Schema.load(path) if uris.exists(path) else None
    except Exception as err:  # noqa: BLE001 - any storage error: not checkable from here
        log.warning("record layout not checked: %s cannot be read here (%s)", path,
                    " ".join(str(err).split())[:200])
        return None


def build_requests(job: VertexJob, model_name: str = "") -> List:
    """The UploadModelRequest and CreateBatchPredictionJobRequest ``submit`` would send.

    ``model_name`` is the uploaded model's resource name; before the upload it is not known
    and a placeholder stands in (``submit`` fills in the real one).
    """
    from google.cloud import aiplatform_v1 as v1

    check(job)
    upload = v1.UploadModelRequest(parent=job.parent, model=v1.Model(
        display_name=job.display_name, artifact_uri=job.model_uri, labels=dict(job.labels),
        container_spec=v1.ModelContainerSpec(image_uri=job.serving_image)))
    machine = v1.MachineSpec(machine_type=job.machine_type)
    if job.accelerator_type:
        machine.accelerator_type = job.accelerator_type
        machine.accelerator_count = job.accelerator_count
    batch = v1.BatchPredictionJob(
        display_name=job.display_name,
        model=model_name or f"{job.parent}/models/UPLOADED_MODEL",
        input_config=v1.BatchPredictionJob.InputConfig(
            instances_format=job.instances_format,
            gcs_source=v1.GcsSource(uris=list(job.input_uris))),
        output_config=v1.BatchPredictionJob.OutputConfig(
            predictions_format=job.predictions_format,
            gcs_destination=v1.GcsDestination(output_uri_prefix=job.output_uri_prefix)),
        dedicated_resources=v1.BatchDedicatedResources(
            machine_spec=machine, starting_replica_count=job.starting_replica_count,
            max_replica_count=job.max_replica_count),
        labels=dict(job.labels))
    if job.batch_size:
        batch.manual_batch_tuning_parameters = v1.ManualBatchTuningParameters(
            batch_size=job.batch_size)
    if job.service_account:
        batch.service_account = job.service_account
    return [upload, v1.CreateBatchPredictionJobRequest(parent=job.parent,
                                                       batch_prediction_job=batch)]


def submit(job: VertexJob, wait: bool = True, poll_s: float = 30.0, clients=None,
           gcp_resources: str = "") -> Dict:
    """Upload the model, create the batch prediction job and, with ``wait``, await its end.

    ``clients`` is ``(ModelServiceClient, JobServiceClient)``; by default they are made for
    the job's regional endpoint with application-default credentials. Once the job exists it
    is named in ``gcp_resources`` (a path; empty: nowhere). SIGTERM while waiting (KFP
    cancelling the step) cancels the job and exits with an error.
    """
    from google.cloud import aiplatform_v1 as v1

    if clients is None:
        options = {"api_endpoint": job.endpoint}
        clients = (v1.ModelServiceClient(client_options=options),
                   v1.JobServiceClient(client_options=options))
    models, jobs = clients
    upload, _ = build_requests(job)
    with vertex_jobs.cancelled_if_stopped(
            "Vertex batch prediction", "BatchPredictionJob", gcp_resources,
            lambda name: jobs.cancel_batch_prediction_job(name=name),
            lambda name: jobs.get_batch_prediction_job(name=name).state.name) as started:
        model_name = models.upload_model(request=upload).result().model
        _, create = build_requests(job, model_name)
        created = jobs.create_batch_prediction_job(request=create)
        log.info("created Vertex AI BatchPredictionJob %s", created.name)
        started.created(created.name)
        state = _wait(jobs, created, poll_s) if wait else created
    if wait and state.state.name != "JOB_STATE_SUCCEEDED":
        raise RuntimeError(f"Vertex batch prediction job {created.name} ended in "
                           f"{state.state.name}: {state.error.message}")
    return {"model": model_name, "job": created.name, "state": state.state.name,
            "output": state.output_info.gcs_output_directory if wait else ""}


def _wait(jobs, created, poll_s: float):
    """The job once it has ended, logging each change of state (reading it survives the
    API's hiccups: common/platform/follow.py). The first state is the one it was created
    in."""
    seen, first = "", [created]

    def observe(state) -> None:
        nonlocal seen
        if state.state.name != seen:
            seen = state.state.name
            log.info("BatchPredictionJob %s: %s", created.name, seen)

    return follow(f"Vertex AI BatchPredictionJob {created.name}",
                  lambda: first.pop() if first else jobs.get_batch_prediction_job(
                      name=created.name),
                  lambda state: state.state.name in vertex_jobs.ENDED, interval=poll_s,
                  observe=observe, describe=lambda state: state.state.name)
