"""The Vertex AI batch prediction option, checked by the requests it would send (no network)."""

import pytest
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


class FakeOperation:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class FakeModels:
    def __init__(self):
        self.sent = []

    def upload_model(self, request):
        self.sent.append(request)
        return FakeOperation(v1.UploadModelResponse(model=f"{request.parent}/models/7"))


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
