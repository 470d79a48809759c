"""The training pipeline's tuning stage: tune_trials > 0 runs tune in train's place."""

import json

import pytest
import yaml

from conftest import messy_rows, summary_row, write_messy_csv
from tfkfp.cli.main import main
from tfkfp.pipelines import registry

RATE = {"learning_rate": {"type": "float", "low": 0.003, "high": 0.03, "log": True}}


def test_the_compiled_pipeline_runs_tune_or_train_and_hands_one_model_on():
    with open(registry.golden_path("training")) as f:
        spec = yaml.safe_load(f)
    tasks = spec["root"]["dag"]["tasks"]
    (key,) = [k for k in tasks if k.startswith("condition-branches")]
    branches = spec["components"][tasks[key]["componentRef"]["name"]]
    conditions = {task["taskInfo"]["name"]: task["triggerPolicy"]["condition"]
                  for task in branches["dag"]["tasks"].values()}
    assert "pipelinechannel--tune_trials']) > 0" in conditions["tune"]
    assert conditions["train"].startswith("!(")  # the Else
    (model,) = branches["dag"]["outputs"]["artifacts"].values()
    assert len(model["artifactSelectors"]) == 2  # dsl.OneOf: tune's model or train's
    for step in ("freeze-quantize", "export-tflite", "batch-predict"):
        given = tasks[step]["inputs"]["artifacts"]["model"]["taskOutputArtifact"]
        assert given["producerTask"] == key


@pytest.mark.parametrize("arguments, named", [
    ({"search_space": {"dropout": {"type": "float", "low": 0.1, "high": 0.5}}}, "'dropout'"),
    ({"tune_objective": "eval_top5"}, "objective 'eval_top5'"),
    ({"tune_engine": "optuna"}, "engine 'optuna'"),
    ({"strategy": "multi_worker_mirrored"}, "a trial runs in one process"),
])
def test_a_tuning_request_is_refused_before_a_run(arguments, named):
    with pytest.raises(registry.ParameterError) as refused:
        registry.check_values("training", {"input_uri": "gs://b/t.csv", "label": "y",
                                           "tune_trials": 4, **arguments})
    assert named in str(refused.value) and "(step tune)" in str(refused.value)


def test_without_tune_trials_the_space_is_not_checked():
    registry.check_values("training", {"input_uri": "gs://b/t.csv", "label": "y",
                                       "search_space": {"dropout": {}}})


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_a_tuned_model_is_frozen_exported_and_predicts(tmp_path, capsys):
    write_messy_csv(tmp_path / "table.csv", messy_rows(600))
    root = tmp_path / "root"
    settings = {"input_uri": str(tmp_path / "table.csv"), "label": "label", "epochs": 2,
                "hidden_units": "16", "tune_trials": 2, "search_space": json.dumps(RATE),
                "quantization": "dynamic", "max_accuracy_drop": 0.1, "min_agreement": 0.8}
    code = main(["run", "training", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert code == 0
    table = capsys.readouterr().out
    assert "(tune," in summary_row(table, "model")  # the best trial's model went on
    assert not list(root.rglob("train/model"))  # train's branch did not run
    best = json.loads(next(root.rglob("tune/best_settings")).read_text())
    assert 0.003 <= best["learning_rate"] <= 0.03  # searched
    assert (best["epochs"], best["hidden_units"]) == (2, "16")  # the pipeline's own settings
    assert (next(root.rglob("export-tflite/bundle")) / "model.tflite").exists()
    assert "predictions" in summary_row(table, "predictions")
