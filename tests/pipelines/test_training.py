import json
import os

import numpy as np
import pytest

from conftest import write_csv
from tfkfp.pipelines import local_run


@pytest.fixture(scope="module")
def two_file_table(tmp_path_factory):
    """A small learnable table split over two CSV files (for sharding fan-out)."""
    folder = tmp_path_factory.mktemp("table")
    rng = np.random.default_rng(0)
    for part in range(2):
        rows = []
        for i in range(part * 400, part * 400 + 400):
            x, y = rng.normal(size=2)
            rows.append([i, round(x, 4), round(y, 4), "up" if x + y > 0 else "down"])
        write_csv(folder / f"part{part}.csv", ["id", "x", "y", "side"], rows)
    return str(folder)


@pytest.mark.slow
def test_training_pipeline_fans_out_sharding_and_ships_a_validated_tflite_model(
        two_file_table, tmp_path):
    task = local_run.run_local("training", {
        "input_uri": two_file_table, "label": "side", "keys": ["id"], "shard_groups": 2,
        "epochs": 3, "hidden_units": "16", "learning_rate": 0.01, "quantization": "dynamic",
        "max_accuracy_drop": 0.05, "min_agreement": 0.9, "output_format": "csv",
        "diagnose": True},
        str(tmp_path / "root"))
    outputs = local_run.outputs_of(task)
    assert outputs["model"].metadata["eval_accuracy"] > 0.85
    assert os.path.exists(os.path.join(outputs["tflite"].path, "model.tflite"))
    assert outputs["tflite"].metadata["agreement"] >= 0.9
    predictions = outputs["predictions"].metadata
    assert predictions["inputs"] == predictions["predictions"] > 0
    merged = json.load(open(next((tmp_path / "root").rglob("merge-datasets/dataset/"
                                                          "manifest.json"))))
    assert len(merged["merged_from"]) == 2
    report = next((tmp_path / "root").rglob("diagnose-bottleneck/report")).read_text()
    assert "bound" in report


@pytest.mark.slow
def test_the_accuracy_gate_stops_the_pipeline(two_file_table, tmp_path):
    # run_local does not check the arguments first (tfkfp run does), so export_tflite refuses
    with pytest.raises(local_run.TaskFailed, match="^export-tflite: .*min_agreement 1.5"):
        local_run.run_local("training", {
            "input_uri": two_file_table, "label": "side", "epochs": 1, "hidden_units": "8",
            "quantization": "dynamic", "min_agreement": 1.5}, str(tmp_path / "root"))
