"""dsl.OneOf over artifacts in a plain kfp.local run, once a tfkfp pipeline that uses it is
imported: the artifact of the branch that ran goes on, as on KFP's backend."""

from kfp import dsl, local
from kfp.dsl import Input, Model, Output
from kfp.local.orchestrator.orchestrator_utils import OrchestratorUtils

import tfkfp.pipelines.training  # noqa: F401 - importing it teaches kfp.local
from tfkfp.pipelines import kfp_local


@dsl.component(base_image="python:3.11")
def write_model(text: str, model: Output[Model]):
    with open(model.path, "w") as f:
        f.write(text)


@dsl.component(base_image="python:3.11")
def read_model(model: Input[Model]) -> str:
    with open(model.path) as f:
        return f.read()


@dsl.pipeline
def either(trials: int = 0) -> str:
    with dsl.If(trials > 0, name="tune"):
        tuned = write_model(text="tuned")
    with dsl.Else(name="train"):
        trained = write_model(text="trained")
    return read_model(model=dsl.OneOf(tuned.outputs["model"], trained.outputs["model"])).output


def test_the_branch_that_ran_hands_its_artifact_on_in_a_plain_kfp_local_run(tmp_path):
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path))
    assert either(trials=0).output == "trained"
    assert either(trials=3).output == "tuned"


def test_teaching_twice_changes_nothing():
    taught = OrchestratorUtils.__dict__["get_dag_output_artifacts"]
    kfp_local.teach_oneof_artifacts()
    assert OrchestratorUtils.__dict__["get_dag_output_artifacts"] is taught
