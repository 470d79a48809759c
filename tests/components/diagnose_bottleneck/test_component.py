import json

import pytest
from kfp import dsl, local

from tfkfp.components.diagnose_bottleneck.component import diagnose_bottleneck
from tfkfp.components.shard_tfrecords.component import shard_tfrecords


@pytest.mark.slow
def test_diagnoses_inside_a_local_pipeline(demo_dir, tmp_path):
    @dsl.pipeline
    def shard_and_diagnose(csv: str) -> str:
        data = shard_tfrecords(input_uri=csv, label="label", keys=["id"])
        return diagnose_bottleneck(dataset=data.outputs["dataset"], hidden_units="1024,1024",
                                   batch_size=4096, memory_limit_mb=64,
                                   seconds=0.5).outputs["Output"]

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(tmp_path / "root"), raise_on_error=True)
    verdict = shard_and_diagnose(csv=demo_dir.csv).output
    assert verdict == "memory-bound"
    root = tmp_path / "root"
    reports = [p for p in root.rglob("report") if p.is_file()]
    assert reports, "no report was written"
    text = reports[0].read_text()
    assert "# Bottleneck diagnosis" in text and "**memory-bound**" in text
    assert "train batch_size=" in text
    assert not list(root.rglob("*.tmp")), "a temporary file was left behind"
    (page,) = [p for p in root.rglob("charts") if p.is_file()]
    # a step that does not fit never ran: an empty page, claiming nothing
    assert page.read_text() == "<!DOCTYPE html><html></html>\n"
    outputs = json.loads(reports[0].with_name("executor_output.json").read_text())
    logged = outputs["artifacts"]["metrics"]["artifacts"][0]["metadata"]
    assert logged["memory_budget_mb"] == 64 and logged["step_memory_mb"] > 0.9 * 64
    assert logged["input_records_per_second"] > 0 and logged["parameters"] > 1_000_000
    described = outputs["artifacts"]["report"]["artifacts"][0]["metadata"]
    assert described["verdict"] == "memory-bound"
    assert described["remedies"][0].startswith("use a smaller per-replica batch")
