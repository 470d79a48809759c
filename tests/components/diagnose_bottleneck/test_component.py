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
