"""Vertex AI's model and job services, faked inside a step that a test runs as a subprocess
(tests/compiled_step.py): with this folder on PYTHONPATH and TFKFP_FAKE_VERTEX naming a
folder, Python replaces ``aiplatform_v1.ModelServiceClient`` and ``JobServiceClient`` at
start-up, before the step's code makes its clients. Every call is appended to
``calls.jsonl`` in that folder, so the test reads what the step asked for. A job runs until
it is cancelled; then it reports JOB_STATE_CANCELLED. No network is used."""

import json
import os

FOLDER = os.environ.get("TFKFP_FAKE_VERTEX")


def record(call: str, **fields) -> None:
    with open(os.path.join(FOLDER, "calls.jsonl"), "a") as f:
        f.write(json.dumps({"call": call, **fields}) + "\n")


if FOLDER:
    from google.cloud import aiplatform_v1 as v1
    from long_running import Done

    class FakeModelService:
        def __init__(self, client_options=None, **kwargs):
            record("ModelServiceClient", client_options=client_options)

        def upload_model(self, request):
            record("upload_model", parent=request.parent,
                   artifact_uri=request.model.artifact_uri)
            return Done(v1.UploadModelResponse(model=f"{request.parent}/models/7"))

    class FakeJobService:
        def __init__(self, client_options=None, **kwargs):
            record("JobServiceClient", client_options=client_options)
            self.cancelled = set()

        def create_batch_prediction_job(self, request):
            name = f"{request.parent}/batchPredictionJobs/9"
            record("create_batch_prediction_job", name=name,
                   model=request.batch_prediction_job.model)
            return v1.BatchPredictionJob(name=name, state=v1.JobState.JOB_STATE_PENDING)

        def get_batch_prediction_job(self, name):
            state = ("JOB_STATE_CANCELLED" if name in self.cancelled
                     else "JOB_STATE_RUNNING")
            record("get_batch_prediction_job", name=name, state=state)
            return v1.BatchPredictionJob(name=name, state=state)

        def cancel_batch_prediction_job(self, name):
            record("cancel_batch_prediction_job", name=name)
            self.cancelled.add(name)

    v1.ModelServiceClient = FakeModelService
    v1.JobServiceClient = FakeJobService
