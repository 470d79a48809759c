"""The committed YAML is what users upload: it must match the code, parse as a KFP
PipelineSpec, and run every step in the suite's image."""

import pytest
import yaml
from google.protobuf import json_format
from kfp import compiler
from kfp.pipeline_spec import pipeline_spec_pb2

from tfkfp.components._image import GPU_IMAGE, IMAGE
from tfkfp.pipelines import registry
from tfkfp.pipelines.batch_prediction import batch_prediction
from tfkfp.pipelines.edge_export import edge_export

REGENERATE = "regenerate with: tfkfp compile --out pipelines"


def without_sdk_version(spec: dict) -> dict:
    spec.pop("sdkVersion", None)
    return spec


@pytest.mark.parametrize("name", registry.names())
def test_committed_yaml_matches_the_pipeline_code(name, tmp_path):
    fresh = registry.compile_pipeline(name, str(tmp_path / f"{name}.yaml"))
    golden = registry.golden_path(name)
    with open(golden) as f, open(fresh) as g:
        assert without_sdk_version(yaml.safe_load(f)) == without_sdk_version(
            yaml.safe_load(g)), f"{golden} is out of date; {REGENERATE}"


@pytest.mark.parametrize("pipeline,tasks", [
    (batch_prediction, ("for-loop", "merge-predictions", "shard-tfrecords")),
    (edge_export, ("freeze-quantize", "export-tflite", "importer")),
], ids=["batch_prediction", "edge_export"])
def test_the_pipeline_function_compiles_with_its_tasks(pipeline, tasks, tmp_path):
    out = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(pipeline, str(out))
    text = out.read_text()
    assert [task for task in tasks if task not in text] == []


@pytest.mark.parametrize("name", registry.names())
def test_yaml_is_a_strict_pipeline_spec_running_the_suite_image(name):
    with open(registry.golden_path(name)) as f:
        body = yaml.safe_load(f)
    spec = pipeline_spec_pb2.PipelineSpec()
    json_format.ParseDict(body, spec, ignore_unknown_fields=False)
    executors = body["deploymentSpec"]["executors"].values()
    images = {e["container"]["image"] for e in executors if "container" in e}
    assert images == {IMAGE}


def _executors(path):
    with open(path) as f:
        return yaml.safe_load(f)["deploymentSpec"]["executors"]


def test_a_gpu_compile_puts_only_the_train_step_on_gpus_in_the_gpu_image(tmp_path, capsys):
    from tfkfp.cli.main import main

    assert main(["compile", "--gpus", "2", "--out", str(tmp_path)]) == 0
    executors = _executors(tmp_path / "training.yaml")
    train = executors.pop("exec-train")["container"]
    assert train["image"] == GPU_IMAGE
    assert train["resources"]["accelerator"]["resourceType"] == "nvidia.com/gpu"
    assert train["resources"]["accelerator"]["resourceCount"] == "2"
    assert {e["container"]["image"] for e in executors.values()} == {IMAGE}
    assert not any("accelerator" in e["container"].get("resources", {})
                   for e in executors.values())
    # The pipelines without a train step compile as committed.
    for name in ("batch_prediction", "edge_export"):
        assert _executors(tmp_path / f"{name}.yaml") == _executors(registry.golden_path(name))


@pytest.mark.parametrize("flags, message", [
    (["--gpus", "17"], "--gpus 17: expected 1 to 16 GPUs per train pod"),
    (["--gpus", "1", "--gpu-type", ":x"], "--gpu-type ':x': expected a resource or accelerator"),
    (["--gpu-type", "NVIDIA_TESLA_T4"], "--gpu-type NVIDIA_TESLA_T4 needs --gpus COUNT"),
])
def test_a_bad_gpu_request_is_refused_before_anything_is_written(flags, message, tmp_path,
                                                                 capsys):
    from tfkfp.cli.main import main

    out = tmp_path / "out"
    assert main(["compile", *flags, "--out", str(out)]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_image_compile_names_only_that_image_and_its_gpu_variant(tmp_path, monkeypatch):
    from tfkfp.cli.main import main

    mine = "europe-docker.pkg.dev/acme/ml/tfkfp:2024.1"
    assert main(["compile", "--image", mine, "--gpus", "1", "--out", str(tmp_path)]) == 0
    for name in registry.names():
        text = (tmp_path / f"{name}.yaml").read_text()
        assert IMAGE not in text  # not even in a step's environment
        for executor_name, executor in _executors(tmp_path / f"{name}.yaml").items():
            container = executor.get("container")
            if container is None:
                continue
            want = f"{mine}-gpu" if executor_name == "exec-train" else mine
            assert container["image"] == want, executor_name
            assert {"name": "TFKFP_IMAGE", "value": want} in container["env"]
    # The environment variable does the same, for CI jobs that compile for their registry.
    monkeypatch.setenv("TFKFP_IMAGE", mine)
    assert main(["compile", "--out", str(tmp_path / "env")]) == 0
    assert {e["container"]["image"] for e in _executors(tmp_path / "env" / "edge_export.yaml")
            .values() if "container" in e} == {mine}


@pytest.mark.parametrize("image", ["tfkfp", "Registry/Name:tag", "r/n@sha256:abc"])
def test_an_image_without_a_tag_is_refused_before_anything_is_written(image, tmp_path,
                                                                      capsys):
    from tfkfp.cli.main import main

    assert main(["compile", "--image", image, "--out", str(tmp_path / "out")]) == 1
    assert "expected REGISTRY/NAME:TAG" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_cluster_launchers_give_replicas_the_steps_own_image(monkeypatch):
    from tfkfp.components.train.launchers.job import parse_options

    assert parse_options("tfjob", {}).image == IMAGE
    monkeypatch.setenv("TFKFP_IMAGE", "registry.local/tfkfp:1")
    assert parse_options("tfjob", {}).image == "registry.local/tfkfp:1"


def test_training_passes_warm_start_model_uri_to_the_train_step():
    with open(registry.golden_path("training")) as f:
        body = yaml.safe_load(f)
    parameter = body["root"]["inputDefinitions"]["parameters"]["warm_start_model_uri"]
    assert (parameter["parameterType"], parameter["defaultValue"]) == ("STRING", "")
    # train runs in the Else branch of the tuning stage: the parameter reaches it through it
    (train,) = [dag["dag"]["tasks"]["train"]["inputs"]["parameters"]
                for dag in body["components"].values() if "train" in dag.get("dag", {}).get(
                    "tasks", {})]
    assert train["warm_start_model_uri"] == {
        "componentInputParameter": "pipelinechannel--warm_start_model_uri"}
