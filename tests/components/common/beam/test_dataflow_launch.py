"""The whole launch for real: Beam's DataflowRunner stages the job to Cloud Storage and
creates it through Dataflow's API, both faked on loopback (tests/fake_dataflow), then
run_on_dataflow names it in gcp_resources and follows it to its end.

Each launch runs in its own process: Beam keeps the first credentials it finds for the
life of a process and sets the socket default timeout, which the test process must not
inherit."""

import json
import subprocess
import sys
import zipfile

import pytest
from fake_dataflow import service, storage
from fake_dataflow.launcher_env import EMAIL, environment

from tfkfp.components.common.beam.dataflow import gcp_resources, suite_wheel
from tfkfp.components.common.beam.dataflow_images import launcher_versions

LAUNCH = """
import json, sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from tfkfp.components.common.beam import dataflow
from tfkfp.components.common.beam.dataflow_api import DataflowJobs

api, options, streaming, path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1", \\
    sys.argv[4]
settings = dataflow.dataflow_settings(options)
endpoint = api.replace("127.0.0.1", "localhost")  # Beam speaks REST to a 'localhost' endpoint
args = dataflow.pipeline_args(settings, "tfkfp-launch", streaming) + [
    f"--dataflow_endpoint={endpoint}"]
pipeline = beam.Pipeline(options=PipelineOptions(args))
_ = pipeline | beam.Create([1, 2]) | beam.Map(lambda x: x + 1)
jobs = DataflowJobs(dataflow.require_google_credentials(), base_url=api, timeout=10)
outcome = dataflow.run_on_dataflow(pipeline, settings, path, streaming=streaming,
                                   client=jobs, poll_seconds=0.05)
print("OUTCOME " + json.dumps([outcome.job_id, outcome.state]))
"""
BASE = {"project": "tfkfp-test", "region": "europe-west4",
        "temp_location": "gs://tfkfp-test-bucket/tmp"}


@pytest.fixture
def fakes():
    with service.serving() as dataflow_api, storage.serving() as gcs:
        yield dataflow_api, gcs


def launch(fakes, tmp_path, options, streaming=False, extra_env=None):
    """Launch in a child process; (job id, final state, the Job body Beam created)."""
    dataflow_api, gcs = fakes
    env = {**environment(tmp_path, gcs.url), **(extra_env or {})}
    done = subprocess.run([sys.executable, "-c", LAUNCH, dataflow_api.url, json.dumps(options),
                           "1" if streaming else "0", str(tmp_path / "gcp_resources")],
                          env=env, capture_output=True, text=True, timeout=300)
    outcome = [line for line in done.stdout.splitlines() if line.startswith("OUTCOME ")]
    assert done.returncode == 0 and outcome, done.stderr[-4000:]
    job_id, state = json.loads(outcome[0][len("OUTCOME "):])
    assert (tmp_path / "gcp_resources").read_text() == gcp_resources(
        "tfkfp-test", "europe-west4", job_id)
    return job_id, state, dataflow_api.created[job_id]


def staged(gcs):
    """{file name: bytes} of what Beam staged for the job."""
    return {name.rsplit("/", 1)[-1]: data for (_, name), data in gcs.objects.items()}


def test_a_batch_job_with_the_worker_image_is_launched_named_and_followed(fakes, tmp_path):
    python, beam = launcher_versions()
    image = f"apache/beam_python{python}_sdk:{beam}"
    options = {**BASE, "sdk_container_image": image, "machine_type": "n2-standard-4",
               "max_workers": "3", "service_account": EMAIL, "labels": "team=ml",
               "subnetwork": "regions/europe-west4/subnetworks/sub-a"}
    job_id, state, created = launch(fakes, tmp_path, options)
    assert state == "JOB_STATE_DONE"
    assert created["name"] == "tfkfp-launch" and created["labels"] == {"team": "ml"}
    assert created["type"] in (1, "JOB_TYPE_BATCH")
    environment_ = created["environment"]
    (pool,) = environment_["workerPools"]
    assert pool["sdkHarnessContainerImages"][0]["containerImage"] == image
    assert (pool["machineType"], pool["autoscalingSettings"]["maxNumWorkers"],
            pool["subnetwork"]) == ("n2-standard-4", 3,
                                   "regions/europe-west4/subnetworks/sub-a")
    assert environment_["serviceAccountEmail"] == EMAIL
    assert "pipeline.pb" in staged(fakes[1])
    updates = [r for r in fakes[0].requests if r["method"] == "PUT"]
    assert not updates, "a job that finished is not cancelled"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return suite_wheel(str(tmp_path_factory.mktemp("wheel")))


def test_without_an_image_the_suite_wheel_and_its_requirements_are_staged(fakes, tmp_path,
                                                                          wheel):
    job_id, state, created = launch(fakes, tmp_path, BASE, extra_env={"TFKFP_WHEEL": wheel})
    files = staged(fakes[1])
    with open(wheel, "rb") as f:
        assert files[wheel.rsplit("/", 1)[-1]] == f.read()
    requirements = files["requirements.txt"].decode()
    assert "\ntensorflow==" in requirements and "apache-beam" not in requirements
    names = {p["name"] for p in created["environment"]["workerPools"][0]["packages"]}
    assert {"requirements.txt", wheel.rsplit("/", 1)[-1]} <= names
    assert "tfkfp/components/common/beam/dataflow.py" in zipfile.ZipFile(wheel).namelist()


def test_a_streaming_job_asks_for_streaming_engine_and_a_drain_ends_it(fakes, tmp_path):
    python, beam = launcher_versions()
    fakes[0].create_script = ["JOB_STATE_RUNNING", "JOB_STATE_DRAINING",
                              "JOB_STATE_DRAINED"]
    options = {**BASE, "sdk_container_image": f"apache/beam_python{python}_sdk:{beam}"}
    job_id, state, created = launch(fakes, tmp_path, options, streaming=True)
    assert state == "JOB_STATE_DRAINED"
    assert created["type"] in (2, "JOB_TYPE_STREAMING")
    assert "enable_streaming_engine" in created["environment"]["experiments"]
    assert fakes[0].jobs[job_id]["type"] == "JOB_TYPE_STREAMING"
