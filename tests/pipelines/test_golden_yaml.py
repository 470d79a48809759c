"""The committed YAML is what users upload: it must match the code, parse as a KFP
PipelineSpec, and run every step in the suite's image."""

import pytest
import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from tfkfp.components._image import IMAGE
from tfkfp.pipelines import registry

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


@pytest.mark.parametrize("name", registry.names())
def test_yaml_is_a_strict_pipeline_spec_running_the_suite_image(name):
    with open(registry.golden_path(name)) as f:
        body = yaml.safe_load(f)
    spec = pipeline_spec_pb2.PipelineSpec()
    json_format.ParseDict(body, spec, ignore_unknown_fields=False)
    executors = body["deploymentSpec"]["executors"].values()
    images = {e["container"]["image"] for e in executors if "container" in e}
    assert images == {IMAGE}
