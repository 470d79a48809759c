import json
import re

import pytest

from conftest import messy_rows, summary_row, write_messy_csv
from tfkfp.cli import local_run
from tfkfp.cli.main import main


@pytest.fixture(scope="module")
def two_file_table(tmp_path_factory):
    """A learnable table like users have (Unicode strings with commas and quotes, blank
    cells, ``nan``, whole numbers with blanks, a string label) split over two CSV files."""
    folder = tmp_path_factory.mktemp("table")
    rows = messy_rows(800)
    for part in range(2):
        write_messy_csv(folder / f"part{part}.csv", rows[part * 400:(part + 1) * 400])
    return str(folder)


@pytest.mark.slow
@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_training_pipeline_fans_out_sharding_and_ships_a_validated_tflite_model(
        two_file_table, tmp_path, capsys):
    root = tmp_path / "root"
    settings = {"input_uri": two_file_table, "label": "label", "keys": '["id"]', "file_groups": 2,
                "epochs": 6, "hidden_units": "16", "learning_rate": 0.01,
                "quantization": "dynamic", "max_accuracy_drop": 0.05, "min_agreement": 0.9,
                "output_format": "csv", "diagnose": "true"}
    code = main(["run", "training", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")])
    assert code == 0  # the command a user types
    table = capsys.readouterr().out
    assert summary_row(table, "tflite")
    model_row = summary_row(table, "model")
    assert float(re.search(r"eval accuracy ([\d.]+)", model_row).group(1)) > 0.7
    bundle = next(root.rglob("export-tflite/bundle"))
    assert (bundle / "model.tflite").exists()
    signature = json.load(open(bundle / "signature.json"))
    inputs = signature["inputs"]  # how an app feeds strings and gaps to the bundle
    assert inputs["colour"]["missing"]["feed"] == "" and inputs["colour"]["lookup"]
    floats = inputs["floats"]  # the packed layout: x in the bundle's one float block
    at = floats["columns"].index("x")
    assert floats["missing"]["feed"][at] == "NaN"
    assert isinstance(floats["missing"]["fill"][at], float)
    merged = json.load(open(next(root.rglob("merge-datasets/dataset/manifest.json"))))
    assert len(merged["merged_from"]) == 2
    # self-contained: every shard train reads is inside the merge task's own output
    assert all(not s["file"].startswith(("/", "gs://")) and ".." not in s["file"]
               for body in merged["splits"].values() for s in body["shards"])
    schema = json.load(open(next(root.rglob("merge-datasets/dataset/schema.json"))))
    assert {c["name"]: c.get("missing", 0) for c in schema["columns"]}["x"] > 0
    report = next(root.rglob("diagnose-bottleneck/report")).read_text()
    assert "bound" in report
    for task in ("train", "export-tflite"):  # what the KFP UI draws: yes/no, so a curve too
        drawn = classification_metadata(root, task)
        matrix = drawn["confusionMatrix"]
        assert [s["displayName"] for s in matrix["annotationSpecs"]] == ["no", "yes"]
        assert sum(sum(row["row"]) for row in matrix["rows"]) == drawn["examples"] > 0
        curve = drawn["confidenceMetrics"]
        assert 2 < len(curve) <= 101
        assert (curve[0]["falsePositiveRate"], curve[0]["recall"]) == (0.0, 0.0)
        assert (curve[-1]["falsePositiveRate"], curve[-1]["recall"]) == (1.0, 1.0)


def classification_metadata(root, task):
    """The metadata of a task's ClassificationMetrics output, as the local runner kept it."""
    output = json.load(open(next(root.rglob(f"{task}/executor_output.json"))))
    (artifact,) = output["artifacts"]["classification"]["artifacts"]
    return artifact["metadata"]


@pytest.mark.slow
def test_the_accuracy_gate_stops_the_pipeline_and_the_retry_exports_without_training(
        two_file_table, tmp_path):
    settings = {"input_uri": two_file_table, "label": "label", "epochs": 2,
                "hidden_units": "8", "quantization": "dynamic",
                "checkpoint_dir": str(tmp_path / "checkpoints")}
    # run_local does not check the arguments first (tfkfp run does), so export_tflite refuses
    with pytest.raises(local_run.TaskFailed, match="^export-tflite: .*min_agreement 1.5"):
        local_run.run_local("training", {**settings, "min_agreement": 1.5},
                            str(tmp_path / "first"))
    # The same run again with the same checkpoint_dir: train finds the finished checkpoint,
    # exports it without another epoch, and the run goes on to the end.
    run = local_run.run_local("training", settings, str(tmp_path / "retry"))
    model = run.outputs["model"].metadata
    assert model["resumed_after_epoch"] == 2
    assert model["eval_accuracy"] > 0.5
    assert next((tmp_path / "retry").rglob("export-tflite/bundle/model.tflite"), None)
