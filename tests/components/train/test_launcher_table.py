"""The launcher table is the one place a launcher name gets its meaning: a new entry is
checked (the cluster it can place, its options), dispatched to and accepted by the
pipelines' checks by what the table says, with no other change; the modules that read the
table name no cluster launcher themselves, and the docs name every launcher."""

import ast
import json
import pathlib
import re

import pytest

from tfkfp.components.common.platform import uris
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.common.training.shape import Placement
from tfkfp.components.train import launchers
from tfkfp.components.train.core import check_options, train
from tfkfp.components.train.launchers import job

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def slurm(monkeypatch):
    """A launcher no module names: its entry, its own check, and a run that plays the
    cluster (it writes what the chief would)."""
    runs = []

    def check(options):
        if options.gpus > 4:
            raise TrainConfigError(f"launcher_options gpus={options.gpus}: slurm nodes have 4")

    def run(shape, plan, options, gcp_resources=""):
        runs.append((shape, plan, options, gcp_resources))
        uris.write_text_atomic(plan.result_uri, json.dumps(
            {"eval_accuracy": 0.9, "replicas": shape.workers, "history": {}}))

    entry = launchers.Launcher(
        Placement("slurm", max_workers=32, max_ps=2,
                  refuses={"tpu": "cannot run on slurm (its nodes have no TPU)"}),
        "a Slurm batch job", options=("job_dir", "volume_claim", "mount_path", "gpus"),
        check=check, run=run)
    monkeypatch.setattr(launchers, "LAUNCHERS", {**launchers.LAUNCHERS, "slurm": entry})
    return runs


def shared_options(tmp_path, **more):
    shared = tmp_path / "shared"
    return {"job_dir": str(shared / "job"), "volume_claim": "nfs", "mount_path": str(shared),
            **more}


def test_a_launcher_added_to_the_table_is_checked_by_its_entry(slurm, tmp_path):
    ok = dict(strategy="multi_worker_mirrored", workers=20)
    config, options = check_options("d", "m", "slurm", shared_options(tmp_path, gpus=2), **ok)
    assert (config.workers, options.gpus, options.volume_claim) == (20, 2, "nfs")
    for request, message in [
        ({"workers": 33}, "workers=33 for strategy 'multi_worker_mirrored': allowed 1 to 32 "
                          "slurm workers"),
        ({"strategy": "parameter_server", "workers": 2, "parameter_servers": 3},
         "needs 1 to 2 parameter servers with launcher 'slurm'"),
        ({"strategy": "tpu", "workers": 1}, "strategy 'tpu' cannot run on slurm"),
        ({"launcher_options": {"region": "eu"}},
         "launcher_options ['region'] are not known to launcher 'slurm'; allowed: gpus, "
         "job_dir, mount_path, volume_claim"),
        ({"launcher_options": shared_options(tmp_path, gpus=8)}, "slurm nodes have 4"),
    ]:
        request = {**ok, "launcher_options": shared_options(tmp_path), **request}
        with pytest.raises(TrainConfigError, match=re.escape(message)):
            check_options("d", "m", "slurm", **request)
    with pytest.raises(TrainConfigError, match="expected one of local, tfjob, trainjob, "
                                               "vertex, slurm$"):
        launchers.get("pbs")
    with pytest.raises(TrainConfigError, match=r"for the cluster launchers \(tfjob, trainjob, "
                                               r"vertex, slurm\); launcher 'local' takes none"):
        job.parse_options("local", {"gpus": 1})
    assert launchers.names(in_process=False) == ("tfjob", "trainjob", "vertex", "slurm")


def test_train_dispatches_to_a_launcher_added_to_the_table(slurm, demo_dataset, tmp_path):
    result = train(demo_dataset, str(tmp_path / "model"), strategy="multi_worker_mirrored",
                   workers=12, launcher="slurm", launcher_options=shared_options(tmp_path),
                   gcp_resources=str(tmp_path / "gcp_resources"))
    ((shape, plan, options, gcp_resources),) = slurm
    assert shape.replicas == {"worker": 12}
    assert plan.job_dir == str(tmp_path / "shared" / "job")
    assert plan.copy_in == {demo_dataset: str(tmp_path / "shared" / "job" / "data")}
    assert options.volume_claim == "nfs"
    assert gcp_resources == str(tmp_path / "gcp_resources")
    assert result.figures["eval_accuracy"] == 0.9 and result.figures["workers"] == 12


def test_the_pipelines_checks_accept_a_launcher_added_to_the_table(slurm, tmp_path):
    from tfkfp.pipelines.training import check_arguments

    request = {"input_uri": "gs://b/data.csv", "label": "y", "launcher": "slurm",
               "strategy": "multi_worker_mirrored", "workers": 16,
               "launcher_options": shared_options(tmp_path)}
    check_arguments(request)
    with pytest.raises(TrainConfigError, match="allowed 1 to 32 slurm workers"):
        check_arguments({**request, "workers": 40})
    assert not slurm  # checked, never run


READERS = ["components/train/core.py", "components/train/launchers/job.py",
           "components/common/training/shape.py", "components/common/training/strategies.py",
           "pipelines/training.py"]


@pytest.mark.parametrize("path", READERS)
def test_the_modules_that_read_the_table_name_no_cluster_launcher(path):
    """Outside docstrings: a launcher's name in their code would be a second list."""
    tree = ast.parse((ROOT / path).read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    named = sorted({node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and id(node) not in docstrings
                    and node.value in launchers.names(in_process=False)})
    assert not named, f"{path} names launchers {named}; read them from LAUNCHERS"


@pytest.mark.parametrize("path", ["components/train/component.py", "pipelines/training.py",
                                  "docs/how-to/training.md", "docs/reference/parameters.md"])
def test_the_docs_name_every_launcher_of_the_table(path):
    text = (ROOT / path).read_text()
    missing = [name for name in launchers.LAUNCHERS if not re.search(rf"\b{name}\b", text)]
    assert not missing, f"{path} does not describe launchers {missing}"
