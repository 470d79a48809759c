"""The streaming job as Dataflow receives it: stream_predict's stages built on Beam's
DataflowRunner, staged to Cloud Storage and created through Dataflow's API (both faked on
loopback, tests/fake_dataflow), returning once the job runs (a stream outlives the pipeline
run) with the job named in gcp_resources. Run in a child process: Beam keeps the first
credentials it finds for the life of a process."""

import json
import subprocess
import sys

import pytest
from fake_dataflow import service, storage
from fake_dataflow.launcher_env import environment

from tfkfp.components.common.beam.dataflow import gcp_resources
from tfkfp.components.common.beam.dataflow_images import launcher_versions

pytestmark = pytest.mark.slow

LAUNCH = """
import json, sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from tfkfp.components.common.beam import dataflow
from tfkfp.components.common.beam.dataflow_api import DataflowJobs
from tfkfp.components.stream_predict.options import StreamOptions
from tfkfp.components.stream_predict.stream import build

api, settings, model, path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
settings = dataflow.dataflow_settings(settings)
endpoint = api.replace("127.0.0.1", "localhost")  # Beam speaks REST to a 'localhost' endpoint
args = dataflow.pipeline_args(settings, "tfkfp-stream-test", streaming=True) + [
    f"--dataflow_endpoint={endpoint}"]
pipeline = beam.Pipeline(options=PipelineOptions(args))
options = StreamOptions("projects/tfkfp-test/subscriptions/rows-sub",
                         "projects/tfkfp-test/topics/predictions",
                         "projects/tfkfp-test/topics/dead-letters", id_label="event_uid")
build(pipeline, options, model, options.id_label)
jobs = DataflowJobs(dataflow.require_google_credentials(), base_url=api, timeout=10)
outcome = dataflow.run_on_dataflow(pipeline, settings, path, follow=False, streaming=True,
                                   client=jobs, poll_seconds=0.05)
print("OUTCOME " + json.dumps([outcome.job_id, outcome.state]))
"""


def test_the_stream_is_launched_as_a_streaming_job_and_the_step_returns(beam_table,
                                                                         tmp_path):
    python, beam = launcher_versions()
    settings = {"project": "tfkfp-test", "region": "europe-west4",
                "temp_location": "gs://tfkfp-test-bucket/tmp",
                "sdk_container_image": f"apache/beam_python{python}_sdk:{beam}"}
    with service.serving() as dataflow_api, storage.serving() as gcs:
        dataflow_api.create_script = ["JOB_STATE_PENDING", "JOB_STATE_RUNNING"]
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, dataflow_api.url, json.dumps(settings),
             beam_table.model, str(tmp_path / "gcp_resources")],
            env=environment(tmp_path, gcs.url), capture_output=True, text=True, timeout=300)
        outcome = [line for line in done.stdout.splitlines() if line.startswith("OUTCOME ")]
        assert done.returncode == 0 and outcome, done.stderr[-4000:]
        job_id, state = json.loads(outcome[0][len("OUTCOME "):])
        created = dataflow_api.created[job_id]
        staged = {name.rsplit("/", 1)[-1]: data for (_, name), data in gcs.objects.items()}
        cancels = [r for r in dataflow_api.requests if r["method"] == "PUT"]
    assert state == "" and not cancels  # launched and left running: not followed
    assert (tmp_path / "gcp_resources").read_text() == gcp_resources(
        "tfkfp-test", "europe-west4", job_id)
    assert created["type"] in (2, "JOB_TYPE_STREAMING")
    assert "enable_streaming_engine" in created["environment"]["experiments"]
    graph = staged["pipeline.pb"]
    for stage in (b"Read", b"Spread", b"Rows", b"Predict", b"Answer", b"WritePredictions",
                  b"WriteDeadLetters"):  # the names a --update mapping refers to
        assert stage in graph, stage
    for name in (b"projects/tfkfp-test/subscriptions/rows-sub", b"event_uid",
                 b"projects/tfkfp-test/topics/dead-letters"):
        assert name in graph or name in json.dumps(created).encode(), name
