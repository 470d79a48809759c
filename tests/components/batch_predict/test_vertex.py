"""The Vertex AI batch prediction option, checked by the requests it would send (no network)."""

import json
import os
import signal

import pytest
from fake_vertex.long_running import Done
from google.cloud import aiplatform_v1 as v1

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.vertex import VertexJob, build_requests

JOB = VertexJob(project="my-project", region="europe-west4", model_uri="gs://b/model",
                input_uris=["gs://b/data/eval/data-*.tfrecord"], output_uri_prefix="gs://b/out",
                machine_type="n1-highmem-8", starting_replica_count=2, max_replica_count=10,
                batch_size=512, labels={"team": "ml"})


def test_the_upload_request_points_at_the_savedmodel_and_the_serving_image():
    upload, _ = build_requests(JOB)
    assert isinstance(upload, v1.UploadModelRequest)
    assert upload.parent == "projects/my-project/locations/europe-west4"
    assert upload.model.artifact_uri == "gs://b/model"
    assert upload.model.container_spec.image_uri.startswith(
        "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.")
    assert dict(upload.model.labels) == {"team": "ml"}


def test_the_job_request_carries_machine_replicas_formats_and_uris():
    _, create = build_requests(JOB, "projects/my-project/locations/europe-west4/models/42")
    job = create.batch_prediction_job
    assert create.parent == "projects/my-project/locations/europe-west4"
    assert job.model.endswith("/models/42")
    assert job.input_config.instances_format == "tf-record"
    assert list(job.input_config.gcs_source.uris) == ["gs://b/data/eval/data-*.tfrecord"]
    assert job.output_config.predictions_format == "jsonl"
    assert job.output_config.gcs_destination.output_uri_prefix == "gs://b/out"
    resources = job.dedicated_resources
    assert resources.machine_spec.machine_type == "n1-highmem-8"
    assert (resources.starting_replica_count, resources.max_replica_count) == (2, 10)
    assert job.manual_batch_tuning_parameters.batch_size == 512
    assert not resources.machine_spec.accelerator_count
    # what goes over the wire: the request serialises as a proto
    assert v1.CreateBatchPredictionJobRequest.deserialize(
        v1.CreateBatchPredictionJobRequest.serialize(create)) == create


def test_accelerators_are_requested_together():
    import dataclasses

    gpu = dataclasses.replace(JOB, accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1)
    _, create = build_requests(gpu)
    spec = create.batch_prediction_job.dedicated_resources.machine_spec
    assert spec.accelerator_type.name == "NVIDIA_TESLA_T4" and spec.accelerator_count == 1


@pytest.mark.parametrize("change,message", [
    ({"model_uri": "/local/model"}, "model_uri '/local/model' must be a gs:// URI"),
    ({"instances_format": "parquet"}, "instances_format 'parquet' is not one of"),
    ({"starting_replica_count": 5, "max_replica_count": 2}, "starting 5, max 2"),
    ({"accelerator_count": 2}, "accelerator_type and accelerator_count go together"),
    ({"region": "Europe West"}, "is not a Vertex region"),
])
def test_bad_options_are_refused_before_anything_is_sent(change, message):
    import dataclasses

    with pytest.raises(PredictInputError, match=message):
        build_requests(dataclasses.replace(JOB, **change))


class FakeModels:
    def __init__(self):
        self.sent = []

    def upload_model(self, request):
        self.sent.append(request)
        return Done(v1.UploadModelResponse(model=f"{request.parent}/models/7"))


class FakeJobs:
    def __init__(self):
        self.sent = []

    def create_batch_prediction_job(self, request):
        self.sent.append(request)
        return v1.BatchPredictionJob(name=f"{request.parent}/batchPredictionJobs/9",
                                     state=v1.JobState.JOB_STATE_PENDING)


def test_submit_sends_the_upload_then_the_job_for_the_uploaded_model():
    from tfkfp.components.batch_predict.vertex import submit

    models, jobs = FakeModels(), FakeJobs()
    out = submit(JOB, wait=False, clients=(models, jobs))
    assert models.sent == [build_requests(JOB)[0]]
    assert jobs.sent == [build_requests(JOB, out["model"])[1]]
    assert out["model"].endswith("/models/7") and out["job"].endswith("/batchPredictionJobs/9")


def test_submit_names_the_job_in_gcp_resources_as_google_cloud_pipeline_components_do(
        tmp_path):
    from tfkfp.components.batch_predict.vertex import submit

    resources = tmp_path / "gcp_resources"
    out = submit(JOB, wait=False, clients=(FakeModels(), FakeJobs()),
                 gcp_resources=str(resources))
    assert json.loads(resources.read_text()) == {"resources": [{
        "resourceType": "BatchPredictionJob",
        "resourceUri": f"https://europe-west4-aiplatform.googleapis.com/v1/{out['job']}"}]}


class CancellableJobs(FakeJobs):
    """Running until cancelled; the first poll sends this process SIGTERM, as KFP does to
    a cancelled step."""

    def __init__(self):
        super().__init__()
        self.cancelled, self.polls = [], 0

    def get_batch_prediction_job(self, name):
        self.polls += 1
        if self.polls == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        state = "JOB_STATE_CANCELLED" if self.cancelled else "JOB_STATE_RUNNING"
        return v1.BatchPredictionJob(name=name, state=state)

    def cancel_batch_prediction_job(self, name):
        self.cancelled.append(name)


def test_sigterm_while_waiting_cancels_the_job_and_exits_with_why(tmp_path):
    from tfkfp.components.batch_predict.vertex import submit

    jobs = CancellableJobs()
    with pytest.raises(SystemExit) as stopped:
        submit(JOB, poll_s=0.01, clients=(FakeModels(), jobs))
    name = "projects/my-project/locations/europe-west4/batchPredictionJobs/9"
    assert jobs.cancelled == [name]
    assert str(stopped.value) == (
        f"Vertex batch prediction stopped by signal {int(signal.SIGTERM)}: cancelled Vertex AI "
        f"BatchPredictionJob {name} (now JOB_STATE_CANCELLED)")


class FlakyJobs(FakeJobs):
    """The job's reads fail now and then, as an API under load does, then it succeeds."""

    def __init__(self, script):
        super().__init__()
        self.script = list(script)

    def get_batch_prediction_job(self, name):
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return v1.BatchPredictionJob(name=name, state=item, output_info={
            "gcs_output_directory": "gs://b/out/prediction-1"})


def test_waiting_survives_transient_api_errors():
    """common/platform/follow.py retries them; any other error would fail the step."""
    from google.api_core import exceptions as google

    from tfkfp.components.batch_predict.vertex import submit

    jobs = FlakyJobs([google.ServiceUnavailable("down"), "JOB_STATE_RUNNING",
                      google.DeadlineExceeded("late"), "JOB_STATE_SUCCEEDED"])
    out = submit(JOB, poll_s=0.01, clients=(FakeModels(), jobs))
    assert out["state"] == "JOB_STATE_SUCCEEDED" and not jobs.script
    assert out["output"] == "gs://b/out/prediction-1"


@pytest.mark.slow
def test_cancelling_the_compiled_step_cancels_the_batch_prediction_job(tmp_path):
    """The step's real command from its compiled YAML (``sh -ec`` running Python), with
    Vertex AI faked inside it: SIGTERM to the top process once the job exists cancels the
    job, and the step fails saying so."""
    import compiled_step
    from kfp import compiler

    from tfkfp.components.batch_predict.component import vertex_batch_predict

    compiler.Compiler().compile(vertex_batch_predict, str(tmp_path / "step.yaml"))
    spec = compiled_step.load(tmp_path / "step.yaml")
    outputs, fake = tmp_path / "outputs", tmp_path / "vertex"
    outputs.mkdir()
    fake.mkdir()
    executor = compiled_step.executor_input(
        spec, "comp-vertex-batch-predict", outputs,
        {"project": "my-project", "region": "europe-west4",
         "input_uris": ["gs://b/data/eval/data-*.tfrecord"], "output_uri_prefix": "gs://b/out"},
        {"model": "gs://b/model"})
    fakes = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "fake_vertex")
    step = compiled_step.start(spec, "comp-vertex-batch-predict", executor, env={
        "TFKFP_FAKE_VERTEX": str(fake),
        "PYTHONPATH": os.pathsep.join([os.path.abspath(fakes),
                                       os.environ.get("PYTHONPATH", "")])})
    compiled_step.wait_for(outputs / "gcp_resources", step)  # the job exists and is named
    out = compiled_step.terminate(step)

    name = "projects/my-project/locations/europe-west4/batchPredictionJobs/9"
    assert step.returncode != 0, out[-3000:]
    assert f"cancelled Vertex AI BatchPredictionJob {name} (now JOB_STATE_CANCELLED)" in out
    calls = [json.loads(line) for line in (fake / "calls.jsonl").read_text().splitlines()]
    assert {"call": "cancel_batch_prediction_job", "name": name} in calls
    assert json.loads((outputs / "gcp_resources").read_text())["resources"][0] == {
        "resourceType": "BatchPredictionJob",
        "resourceUri": f"https://europe-west4-aiplatform.googleapis.com/v1/{name}"}
