import json

import pytest
import yaml
from kfp import compiler

from tfkfp.components.tune.component import tune
from tfkfp.pipelines import registry


def test_the_component_compiles_with_its_inputs_and_outputs(tmp_path):
    path = tmp_path / "tune.yaml"
    compiler.Compiler().compile(tune, str(path))
    spec = yaml.safe_load(path.read_text())
    component = spec["components"]["comp-tune"]
    assert set(component["outputDefinitions"]["artifacts"]) == {
        "model", "best_settings", "metrics", "report"}
    parameters = component["inputDefinitions"]["parameters"]
    assert parameters["trials"]["defaultValue"] == 8
    assert parameters["search_space"]["parameterType"] == "STRUCT"
    assert "Tunes train's settings" in path.read_text()  # the docstring, for the KFP UI


@pytest.mark.parametrize("arguments, named", [
    ({"search_space": {"learning_rate": {"type": "float", "low": 0.1, "high": 0.01}}},
     "'learning_rate'"),
    ({"search_space": {"dropout": {"type": "float", "low": 0.1, "high": 0.5}}}, "'dropout'"),
    ({"objective": "accuracy"}, "objective 'accuracy'"),
    ({"algorithm": "grid"}, "grid"),  # the default space has a learning-rate range
    ({"train_options": {"optimizer": "adam"}}, "optimizer"),  # searched by the default space
    ({"trials": 0}, "trials"),
    ({"train_options": {"strategy": "parameter_server"}}, "a trial runs in one process"),
    ({"direction": "up"}, "direction 'up' is not one of auto, maximize, minimize"),
    ({"engine": "vizier"}, "engine 'vizier' is not one of local, katib, vertex"),
    ({"engine": "katib", "engine_options": {"colour": "red"}}, "not known to engine 'katib'"),
])
def test_the_tuning_pipeline_refuses_a_bad_request_before_a_run(arguments, named):
    with pytest.raises(registry.ParameterError) as refused:
        registry.check_values("tuning", {"dataset_uri": "gs://b/d", **arguments})
    assert named in str(refused.value) and "(step tune)" in str(refused.value)


def test_the_tuning_pipeline_accepts_its_defaults_and_a_json_space():
    space = json.dumps({"batch_size": {"type": "int", "low": 16, "high": 128, "log": True}})
    values = registry.parse_parameters("tuning", ["dataset_uri=gs://b/d",
                                                  f"search_space={space}", "trials=4"])
    assert values["search_space"]["batch_size"]["log"] is True


@pytest.mark.slow
def test_tuning_runs_as_a_local_pipeline_and_its_model_freezes(demo_dataset, tmp_path,
                                                               monkeypatch):
    from kfp import local

    from tfkfp.components.freeze_quantize.core import freeze_quantize
    from tfkfp.pipelines.tuning import tuning

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # KFP's launcher calls mktemp -d
    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    run = tuning(dataset_uri=demo_dataset, algorithm="grid", trials=2,
                 search_space={"learning_rate": {"type": "categorical",
                                                 "choices": [1e-6, 0.05]}},
                 train_options={"epochs": 1, "hidden_units": "16"})
    with open(run.outputs["best_settings"].path) as f:
        assert json.load(f)["learning_rate"] == 0.05
    freeze_quantize(run.outputs["model"].path, demo_dataset, str(tmp_path / "tflite"),
                    str(tmp_path / "frozen"), quantization="dynamic", eval_examples=200)
    assert (tmp_path / "tflite" / "model.tflite").exists()
