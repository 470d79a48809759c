"""The isolation harness itself: a task reads its own inputs, and a path into another task's
folder, which works on the shared local filesystem, is not there (as on a real backend)."""

import pytest
from isolated_tasks import isolated_tasks, isolation_available
from kfp import dsl

from tfkfp.cli import local_run

pytestmark = pytest.mark.skipif(not isolation_available(),
                                reason="needs unshare and the right to mount (root)")


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def write(table: dsl.Output[dsl.Dataset]) -> str:
    import os

    os.makedirs(table.path)
    with open(os.path.join(table.path, "rows.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    return table.path


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def read_artifact(table: dsl.Input[dsl.Dataset]) -> str:
    import os

    with open(os.path.join(table.path, "rows.csv")) as f:
        return f.read().splitlines()[1]


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def read_path(path: str) -> str:
    import os

    with open(os.path.join(path, "rows.csv")) as f:
        return f.read().splitlines()[1]


@dsl.pipeline(name="by-artifact")
def by_artifact() -> str:
    return read_artifact(table=write().outputs["table"]).output


@dsl.pipeline(name="by-path")
def by_path() -> str:
    return read_path(path=write().outputs["Output"]).output


def test_a_task_reads_copies_of_its_own_input_artifacts(tmp_path):
    with isolated_tasks() as tasks:
        run = local_run.run_pipeline(by_artifact, {}, str(tmp_path / "root"))
    assert run.outputs["Output"] == "1,2"
    (reader,) = [t for t in tasks if t["inputs"]]
    (source,) = reader["inputs"].values()
    assert source.startswith(str(tmp_path / "root"))


def test_a_path_into_another_tasks_folder_is_not_there(tmp_path):
    # Without the harness the shared filesystem hides the mistake...
    assert local_run.run_pipeline(by_path, {}, str(tmp_path / "shared")).outputs[
        "Output"] == "1,2"
    # ...with it, the reader fails as it would in its own pod.
    with isolated_tasks(), pytest.raises(local_run.TaskFailed, match="No such file"):
        local_run.run_pipeline(by_path, {}, str(tmp_path / "isolated"))
