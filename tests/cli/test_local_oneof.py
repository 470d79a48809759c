"""dsl.OneOf over artifacts in a local run: the artifact of the branch that ran goes on."""

import pytest
from kfp import dsl, local
from kfp.dsl import Input, Model, Output

from tfkfp.cli.local_oneof import oneof_artifacts


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


def test_the_branch_that_ran_hands_its_artifact_on(tmp_path):
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path))
    with oneof_artifacts():
        assert either(trials=0).output == "trained"
        assert either(trials=3).output == "tuned"
    with pytest.raises(Exception, match="Expected 1 artifact"):  # kfp.local's own, restored
        either(trials=0)
