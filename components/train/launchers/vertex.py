"""The vertex launcher: the cluster shape as a Vertex AI CustomJob. Worker pool 0 is the chief
(or worker 0 when the strategy has no chief), pool 1 the other workers, pool 2 the parameter
servers; Vertex AI writes each replica's ``TF_CONFIG`` from the pools (chief, worker, ps)."""

import logging
import uuid
from typing import List

from tfkfp.components.common.platform import vertex_jobs
from tfkfp.components.common.platform.follow import follow
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train.errors import VertexJobFailed
from tfkfp.components.train.launchers.spec import JobPlan, LaunchOptions, worker_command

log = logging.getLogger("tfkfp")


def pool_counts(shape: ClusterShape) -> List[int]:
    """Replicas in pools 0 (chief), 1 (workers) and 2 (parameter servers); trailing empty
    pools are left out."""
    workers = shape.workers - (0 if shape.chief else 1)  # worker 0 leads in pool 0
    counts = [1, workers, shape.ps]
    while counts[-1] == 0:
        counts.pop()
    return counts


def check_options(options: LaunchOptions) -> None:
    """What only this launcher asks of its launcher_options."""
    if bool(options.gpu_type) != bool(options.gpus):
        raise TrainConfigError("launcher_options gpu_type and gpus go together on vertex "
                               "(e.g. NVIDIA_TESLA_T4 and 1)")
    if options.gpu_type and options.gpu_type not in accelerator_types():
        raise TrainConfigError(f"launcher_options gpu_type {options.gpu_type!r} is not a "
                               f"Vertex AI accelerator; allowed: "
                               f"{', '.join(accelerator_types())}")


def accelerator_types() -> List[str]:
    """The accelerators Vertex AI's MachineSpec knows (its AcceleratorType enum)."""
    from google.cloud import aiplatform_v1 as v1

    return [kind.name for kind in v1.AcceleratorType if kind.value]


def request(shape: ClusterShape, job: JobPlan, options: LaunchOptions, project: str,
            display_name: str = ""):
    """The CreateCustomJobRequest this launcher sends."""
    from google.cloud import aiplatform_v1 as v1
    from google.protobuf import duration_pb2

    pools = []
    for index, count in enumerate(pool_counts(shape)):
        machine = {"machine_type": options.machine_type}
        if options.gpu_type and index < 2:  # parameter servers need no accelerator
            machine.update(accelerator_type=options.gpu_type, accelerator_count=options.gpus)
        pools.append(v1.WorkerPoolSpec(
            machine_spec=v1.MachineSpec(**machine), replica_count=count,
            container_spec=v1.ContainerSpec(image_uri=options.image,
                                            command=worker_command(job),
                                            env=[v1.EnvVar(name="PYTHONUNBUFFERED",
                                                           value="1")])))
    spec = v1.CustomJobSpec(
        worker_pool_specs=pools,
        base_output_directory=v1.GcsDestination(output_uri_prefix=job.job_dir),
        scheduling=v1.Scheduling(timeout=duration_pb2.Duration(
            seconds=options.deadline_seconds)),
        service_account=options.service_account)
    custom_job = v1.CustomJob(
        display_name=display_name or f"tfkfp-train-{uuid.uuid4().hex[:8]}", job_spec=spec,
        labels={"app": "tfkfp", "component": "train"})
    return v1.CreateCustomJobRequest(
        parent=f"projects/{project}/locations/{options.region}", custom_job=custom_job)


def default_project(options: LaunchOptions) -> str:
    if options.project:
        return options.project
    import google.auth

    _, project = google.auth.default()
    if not project:
        raise VertexJobFailed("launcher 'vertex' needs a Google Cloud project: set "
                              "launcher_options project")
    return project


def job_client(region: str):
    from google.cloud import aiplatform_v1 as v1

    return v1.JobServiceClient(client_options={"api_endpoint":
                                               f"{region}-aiplatform.googleapis.com"})


def run(shape: ClusterShape, job: JobPlan, options: LaunchOptions, client=None,
        gcp_resources: str = "") -> None:
    """Create the CustomJob, wait for it, and raise with Vertex AI's error when it does not
    succeed. Once the job exists it is named in ``gcp_resources`` (a path; empty: nowhere).
    Cancelling the step (SIGTERM) cancels the job."""
    client = client or job_client(options.region)
    req = request(shape, job, options, default_project(options))
    with vertex_jobs.cancelled_if_stopped(
            "training", "CustomJob", gcp_resources,
            lambda name: client.cancel_custom_job(name=name),
            lambda name: client.get_custom_job(name=name).state.name) as started:
        created = client.create_custom_job(request=req)
        log.info("created Vertex AI CustomJob %s (pools %s)", created.name, pool_counts(shape))
        started.created(created.name)
        current = _wait(client, created.name, options.poll_seconds)
    if current.state.name != "JOB_STATE_SUCCEEDED":
        raise VertexJobFailed(f"Vertex AI CustomJob {created.name} ended "
                              f"{current.state.name}: "
                              f"{current.error.message or 'no error message'}")


def _wait(client, name: str, poll_seconds: float):
    """The job once it has ended, logging each change of state (reading it survives the
    API's hiccups: common/platform/follow.py)."""
    seen = ""

    def observe(current) -> None:
        nonlocal seen
        if current.state.name != seen:
            seen = current.state.name
            log.info("CustomJob %s: %s", name, seen)

    return follow(f"Vertex AI CustomJob {name}", lambda: client.get_custom_job(name=name),
                  lambda current: current.state.name in vertex_jobs.ENDED,
                  interval=poll_seconds, observe=observe,
                  describe=lambda current: current.state.name)
