"""Dataflow's settings, pipeline arguments (checked by Beam's own DataflowRunner in a dry run,
which needs neither credentials nor a network), the worker image check, the credentials
check and gcp_resources. Following and stopping a job: test_dataflow_follow.py."""

import json
import os
import subprocess
import sys
import time
import zipfile
from importlib import metadata

import pytest

from tfkfp.components._image import __version__
from tfkfp.components.common.beam import dataflow
from tfkfp.components.common.beam.dataflow import (
    DataflowError,
    DataflowSettings,
    check_worker_image,
    dataflow_settings,
    gcp_resources,
    pipeline_args,
    write_gcp_resources,
)
from tfkfp.components.common.beam.dataflow_images import launcher_versions, worker_image_tag

BUCKET = "gs://tfkfp-test-bucket/tmp"
FULL = {"project": "tfkfp-test", "region": "europe-west4", "temp_location": BUCKET,
        "staging_location": "gs://tfkfp-test-bucket/staging",
        "service_account": "runner@tfkfp-test.iam.gserviceaccount.com",
        "machine_type": "n2-standard-4", "max_workers": "8",
        "sdk_container_image": "eu.gcr.io/tfkfp-test/worker:1", "network": "net-a",
        "subnetwork": "regions/europe-west4/subnetworks/sub-a", "labels": "team=ml, env=dev"}


def test_settings_are_read_from_a_kfp_dict_of_strings():
    settings = dataflow_settings({**FULL, "network": ""})
    assert settings == DataflowSettings(
        project="tfkfp-test", region="europe-west4", temp_location=BUCKET,
        staging_location="gs://tfkfp-test-bucket/staging",
        service_account="runner@tfkfp-test.iam.gserviceaccount.com",
        machine_type="n2-standard-4", max_workers=8,
        sdk_container_image="eu.gcr.io/tfkfp-test/worker:1", network="",
        subnetwork="regions/europe-west4/subnetworks/sub-a",
        labels={"team": "ml", "env": "dev"})


@pytest.mark.parametrize("change, message", [
    ({"workers": "3", "zone": "a"},
     r"beam_options \['workers', 'zone'\] do not apply to Dataflow; it takes \['project', "
     r"'region', 'temp_location', 'staging_location', 'service_account'"),
    ({"project": ""}, r"Dataflow needs beam_options \['project'\] .*required: \['project', "
                      r"'region', 'temp_location'\]"),
    ({"region": None, "temp_location": ""},
     r"needs beam_options \['region', 'temp_location'\]"),
    ({"temp_location": "/tmp/dataflow"},
     r"temp_location '/tmp/dataflow' must be a Cloud Storage folder, gs://BUCKET/FOLDER"),
    ({"staging_location": "gs://b/x"}, r"staging_location 'gs://b/x' must be a Cloud"),
    ({"temp_location": "gs://tfkfp-test-bucket"}, r"temp_location 'gs://tfkfp-test-bucket'"),
    ({"max_workers": "ten"}, r"max_workers 'ten' is not a whole number; expected 0"),
    ({"max_workers": "-2"}, r"max_workers '-2' is not a whole number"),
    ({"project": "12345"}, r"project '12345' is not a project ID"),
    ({"region": "Europe West"}, r"region 'Europe West' is not a Dataflow region"),
    ({"service_account": "runner"}, r"service_account 'runner' is not a service account"),
    ({"labels": "Team=ml"}, r"labels: Team='ml' is not a Google Cloud label"),
])
def test_settings_are_refused_with_what_was_found_and_what_is_allowed(change, message):
    options = {k: v for k, v in {**FULL, **change}.items()}
    with pytest.raises(DataflowError, match=message):
        dataflow_settings(options)
    assert issubclass(DataflowError, ValueError)


def _beam_options(args):
    from apache_beam.options.pipeline_options import (
        GoogleCloudOptions,
        PipelineOptions,
        SetupOptions,
        StandardOptions,
        WorkerOptions,
    )

    options = PipelineOptions(args)
    return (options, options.view_as(GoogleCloudOptions), options.view_as(WorkerOptions),
            options.view_as(StandardOptions), options.view_as(SetupOptions))


def test_pipeline_args_with_a_worker_image_are_what_beam_reads():
    settings = dataflow_settings(FULL)
    args = pipeline_args(settings, "tfkfp-predict-1")
    assert args == [
        "--runner=DataflowRunner", "--project=tfkfp-test", "--region=europe-west4",
        f"--temp_location={BUCKET}", "--job_name=tfkfp-predict-1",
        "--staging_location=gs://tfkfp-test-bucket/staging",
        "--service_account_email=runner@tfkfp-test.iam.gserviceaccount.com",
        "--machine_type=n2-standard-4", "--network=net-a",
        "--subnetwork=regions/europe-west4/subnetworks/sub-a", "--max_num_workers=8",
        "--labels=env=dev", "--labels=team=ml",
        "--sdk_container_image=eu.gcr.io/tfkfp-test/worker:1"]
    _, cloud, worker, standard, setup = _beam_options(args)
    assert (cloud.project, cloud.region, cloud.temp_location, cloud.staging_location,
            cloud.job_name, cloud.service_account_email, cloud.labels) == (
        "tfkfp-test", "europe-west4", BUCKET, "gs://tfkfp-test-bucket/staging",
        "tfkfp-predict-1", "runner@tfkfp-test.iam.gserviceaccount.com",
        ["env=dev", "team=ml"])
    assert (worker.machine_type, worker.max_num_workers, worker.network, worker.subnetwork,
            worker.sdk_container_image) == ("n2-standard-4", 8, "net-a",
                                           "regions/europe-west4/subnetworks/sub-a",
                                           "eu.gcr.io/tfkfp-test/worker:1")
    assert standard.runner == "DataflowRunner" and not standard.streaming
    assert setup.extra_packages is None and setup.requirements_file is None


def test_streaming_pipeline_args_ask_for_streaming_engine():
    settings = dataflow_settings({k: FULL[k] for k in ("project", "region", "temp_location",
                                                       "sdk_container_image")})
    args = pipeline_args(settings, "tfkfp-stream", streaming=True)
    assert args[-2:] == ["--streaming", "--enable_streaming_engine"]
    _, cloud, _, standard, _ = _beam_options(args)
    assert standard.streaming and cloud.enable_streaming_engine
    assert not any(a.startswith(("--staging", "--labels", "--max_num")) for a in args)


@pytest.mark.parametrize("name", ["Tfkfp", "tfkfp_predict", "tfkfp-", "1tfkfp", ""])
def test_a_job_name_dataflow_refuses_is_refused_before_launch(name):
    with pytest.raises(DataflowError, match="Dataflow job name .*: expected lowercase"):
        pipeline_args(dataflow_settings(FULL), name)


@pytest.fixture(scope="module")
def wheel_route(tmp_path_factory):
    """pipeline_args without an image, with the suite's wheel built from this checkout."""
    built = dataflow.suite_wheel(str(tmp_path_factory.mktemp("wheel")))
    settings = dataflow_settings({k: FULL[k] for k in ("project", "region", "temp_location")})
    return pipeline_args(settings, "tfkfp-wheel", wheel=built)


def test_without_an_image_the_workers_get_the_suite_wheel_and_pinned_requirements(
        wheel_route):
    args = dict(a.split("=", 1) for a in wheel_route if "=" in a)
    wheel = args["--extra_package"]
    assert os.path.basename(wheel) == f"tfkfp-{__version__}-py3-none-any.whl"
    assert "tfkfp/components/common/beam/dataflow.py" in zipfile.ZipFile(wheel).namelist()
    assert args["--requirements_cache"] == "skip"
    with open(args["--requirements_file"]) as f:
        pins = dict(line.split("==") for line in f.read().split("\n")
                    if line and not line.startswith("#"))
    for name in ("tensorflow", "numpy", "kfp"):
        assert pins[name] == metadata.version(name), pins
    assert "apache-beam" not in pins and "tfkfp" not in pins, "the SDK image brings Beam"
    _, _, _, _, setup = _beam_options(wheel_route)
    assert setup.extra_packages == [wheel]


def test_a_wheel_named_by_tfkfp_wheel_is_used_and_a_wrong_one_refused(monkeypatch, tmp_path,
                                                                       wheel_route):
    built = dict(a.split("=", 1) for a in wheel_route if "=" in a)["--extra_package"]
    monkeypatch.setenv("TFKFP_WHEEL", built)
    settings = dataflow_settings({k: FULL[k] for k in ("project", "region", "temp_location")})
    assert f"--extra_package={built}" in pipeline_args(settings, "tfkfp-wheel")
    monkeypatch.setenv("TFKFP_WHEEL", str(tmp_path / "tfkfp.tar.gz"))
    with pytest.raises(DataflowError, match=r"TFKFP_WHEEL='.*tfkfp.tar.gz' is not a wheel"):
        pipeline_args(settings, "tfkfp-wheel")


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
@pytest.mark.parametrize("image", [True, False], ids=["image", "wheel"])
def test_beams_dataflow_runner_accepts_the_arguments_in_a_dry_run(streaming, image,
                                                                  wheel_route):
    """Beam validates them (project, gs:// locations, job name) and translates the job;
    a dry run creates no job, which launch_job refuses to follow."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    if image:
        args = pipeline_args(dataflow_settings(FULL), "tfkfp-dry", streaming=streaming)
    else:
        args = [a for a in wheel_route if a != "--job_name=tfkfp-wheel"] + [
            "--job_name=tfkfp-dry"] + (["--streaming"] if streaming else [])
    pipeline = beam.Pipeline(options=PipelineOptions([*args, "--dry_run=True"]))
    _ = pipeline | beam.Create([1, 2]) | beam.Map(lambda x: x + 1)
    with pytest.raises(DataflowError, match="the DataflowRunner created no job"):
        dataflow.launch_job(pipeline)
    job = pipeline.runner.job.proto
    assert job.name == "tfkfp-dry"
    assert job.type_.name == ("JOB_TYPE_STREAMING" if streaming else "JOB_TYPE_BATCH")
    assert dict(job.labels) == ({"team": "ml", "env": "dev"} if image else {})


def test_a_package_the_workers_need_but_not_installed_here_is_refused(monkeypatch):
    from tfkfp.components.common.beam import dataflow_packages

    installed = metadata.version

    def version(name):
        if name == "tensorflow":
            raise metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(dataflow_packages.metadata, "version", version)
    with pytest.raises(DataflowError, match=r"Dataflow workers need \['tensorflow'\], which "
                                            r"are not installed here to pin; install tfkfp\["):
        dataflow_packages.worker_requirements()


def test_the_worker_image_must_run_the_launchers_python_and_beam(caplog):
    python, beam = launcher_versions()
    check_worker_image(f"apache/beam_python{python}_sdk:{beam}")
    check_worker_image(f"eu.gcr.io/p/tfkfp/tfkfp-beam-worker:{worker_image_tag()}@sha256:"
                       + "0" * 64)
    assert not caplog.records
    other = f"3.{int(python.split('.')[1]) + 1}"
    with pytest.raises(DataflowError, match=rf"sdk_container_image 'apache/beam_python"
                       rf"{other}_sdk:{beam}': Python {other} in the image, {python} here"):
        check_worker_image(f"apache/beam_python{other}_sdk:{beam}")
    with pytest.raises(DataflowError, match=rf"Beam 2.1.0 in the image, {beam} here\. "
                       rf".*tagged \.\.\.:{__version__}-py{python}-beam{beam}"):
        check_worker_image(f"localhost:5000/worker:{__version__}-py{python}-beam2.1.0")


@pytest.mark.parametrize("image", ["eu.gcr.io/tfkfp-test/custom:1",
                                   "localhost:5000/worker@sha256:" + "1" * 64])
def test_a_worker_image_that_does_not_tell_its_versions_is_launched_with_a_warning(
        image, caplog):
    check_worker_image(image)
    (record,) = caplog.records
    assert record.levelname == "WARNING"
    assert f"{image} does not tell its python and beam" in record.getMessage()


def test_a_beam_image_tagged_without_a_version_is_checked_for_python_only(caplog):
    python, _ = launcher_versions()
    check_worker_image(f"apache/beam_python{python}_sdk:latest")
    assert "does not tell its beam" in caplog.text


def _gcp_resources_message():
    """GCPC's GcpResources message (proto/gcp_resources.proto), built here without GCPC."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fields = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="gcp_resources_test.proto",
                                              package="gcp_launcher", syntax="proto3")
    message = file.message_type.add(name="GcpResources")
    resource = message.nested_type.add(name="Resource")
    for number, name in ((1, "resource_type"), (2, "resource_uri")):
        resource.field.add(name=name, number=number, type=fields.TYPE_STRING,
                           label=fields.LABEL_OPTIONAL)
    resource.field.add(name="labels", number=4, type=fields.TYPE_STRING,
                       label=fields.LABEL_REPEATED)
    message.field.add(name="resources", number=1, type=fields.TYPE_MESSAGE,
                      label=fields.LABEL_REPEATED,
                      type_name=".gcp_launcher.GcpResources.Resource")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "gcp_launcher.GcpResources"))


def test_gcp_resources_is_what_gcpcs_dataflow_launcher_writes(tmp_path):
    from google.protobuf import json_format

    uri = ("https://dataflow.googleapis.com/v1b3/projects/tfkfp-test/locations/europe-west4/"
           "jobs/2026-11-28_01_02_03-123")
    expected = _gcp_resources_message()()
    expected.resources.add(resource_type="DataflowJob", resource_uri=uri)
    text = gcp_resources("tfkfp-test", "europe-west4", "2026-11-28_01_02_03-123")
    assert text == json_format.MessageToJson(expected)
    assert json.loads(text) == {"resources": [{"resourceType": "DataflowJob",
                                               "resourceUri": uri}]}
    path = tmp_path / "outputs" / "gcp_resources"
    write_gcp_resources(str(path), "tfkfp-test", "europe-west4", "2026-11-28_01_02_03-123")
    assert path.read_text() == text and os.listdir(path.parent) == ["gcp_resources"]


def test_with_google_credentials_they_are_returned(monkeypatch, tmp_path):
    key = tmp_path / "adc.json"
    key.write_text(json.dumps({"type": "authorized_user", "client_id": "id.apps",
                               "client_secret": "secret", "refresh_token": "refresh"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    credentials = dataflow.require_google_credentials()
    assert credentials.refresh_token == "refresh"


REFUSE = """
import os, sys
from tfkfp.components.common.beam.dataflow import DataflowSettings, run_on_dataflow
settings = DataflowSettings("tfkfp-test", "europe-west4", "gs://tfkfp-test-bucket/tmp")
run_on_dataflow(None, settings, sys.argv[1], launch=lambda p: open(sys.argv[2], "w").close())
"""


def test_without_credentials_the_launch_is_refused_in_seconds(tmp_path):
    """No key file, an empty gcloud configuration and a metadata server that cannot answer
    (NO_GCE_CHECK as google-auth reads it; its hosts on a closed loopback port besides)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_"))}
    env.update(HOME=str(home), CLOUDSDK_CONFIG=str(home), NO_GCE_CHECK="true",
               GCE_METADATA_HOST="127.0.0.1:9", GCE_METADATA_IP="127.0.0.1:9")
    outputs, launched = tmp_path / "gcp_resources", tmp_path / "launched"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", REFUSE, outputs, launched], env=env,
                          capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1, done.stderr[-2000:]
    assert last.startswith("tfkfp.components.common.beam.dataflow_errors.DataflowError: no "
                           "Google credentials to launch a Dataflow job: set GOOGLE_"
                           "APPLICATION_CREDENTIALS"), last
    assert elapsed < 5, f"refused after {elapsed:.1f} s"
    assert not launched.exists() and not outputs.exists()
