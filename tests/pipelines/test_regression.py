"""A regression table (a continuous label, a key column, Unicode strings and blank cells)
through the whole ``training`` pipeline with the command a user types."""

import csv
import json
import re

import pytest

from conftest import regression_rows, summary_row, write_regression_csv
from tfkfp.cli.main import main


@pytest.fixture(scope="module")
def houses(tmp_path_factory):
    folder = tmp_path_factory.mktemp("houses")
    return write_regression_csv(folder / "houses.csv", regression_rows(1500, seed=21))


def _run(houses, root, **extra):
    settings = {"input_uri": houses, "label": "price", "keys": '["house"]', "epochs": 10,
                "hidden_units": "32", "learning_rate": 0.01, "quantization": "auto",
                "output_format": "csv", **extra}
    return main(["run", "training", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_a_regression_table_goes_through_the_training_pipeline(houses, tmp_path, capsys):
    root = tmp_path / "root"
    assert _run(houses, root, target_value=15.0) == 0
    table = capsys.readouterr().out
    model_row = summary_row(table, "model")
    rmse = float(re.search(r"eval RMSE ([\d.]+)", model_row).group(1))
    metrics = _metrics(root, "train")
    assert metrics["eval_rmse"] == pytest.approx(rmse, rel=1e-3) and metrics["eval_r2"] > 0.9
    assert {"eval_mae", "seconds_to_target"} <= set(metrics) and "eval_accuracy" not in metrics
    assert "## Predicted against actual" in next(root.rglob("train/report")).read_text()
    bundle = next(root.rglob("export-tflite/bundle"))
    assert json.load(open(bundle / "signature.json"))["task"] == "regression"
    export = _metrics(root, "export-tflite")
    assert export["rmse_increase"] <= 0.05
    predictions = [row for f in sorted(next(root.rglob("batch-predict/predictions"))
                                       .glob("predictions-*.csv"))
                   for row in csv.DictReader(open(f, encoding="utf-8"))]
    # the eval split's rows carry their truth: the label and the residual (predicted - true)
    assert predictions and set(predictions[0]) == {"house", "price", "value", "residual"}
    prices = {row[0]: row[-1] for row in regression_rows(1500, seed=21)}
    for p in predictions:
        assert float(p["price"]) == pytest.approx(prices[p["house"]], abs=1e-3)
        assert float(p["residual"]) == pytest.approx(float(p["value"]) - float(p["price"]),
                                                     abs=1e-3)
    errors = [float(p["value"]) - prices[p["house"]] for p in predictions]
    assert (sum(e * e for e in errors) / len(errors)) ** 0.5 == pytest.approx(rmse, rel=0.01)


def _metrics(root, task):
    output = json.load(open(next(root.rglob(f"{task}/executor_output.json"))))
    (artifact,) = output["artifacts"]["metrics"]["artifacts"]
    return artifact["metadata"]


@pytest.mark.slow
def test_an_impossible_rmse_gate_stops_the_run_naming_it(houses, tmp_path, capsys):
    assert _run(houses, tmp_path / "root", epochs=2, quantization="none",
                max_rmse_increase=-0.5) != 0
    said = capsys.readouterr()
    assert "above max_rmse_increase -50.00%" in said.out + said.err


def test_an_unknown_task_is_refused_before_the_run(houses, tmp_path, capsys):
    assert _run(houses, tmp_path / "root", task="ranking") != 0
    said = capsys.readouterr()
    assert "task 'ranking' is not known; expected one of auto, classification, regression" \
        in said.out + said.err
    assert not (tmp_path / "root").exists()
