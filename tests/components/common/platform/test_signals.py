"""SIGTERM reaching a step's Python: the handler that turns it into SystemExit, and the
compiled command that runs Python with exec (tested end to end by the cancel tests of train
and vertex_batch_predict, which run the step's command from its compiled YAML)."""

import os
import signal

import pytest
from kfp import dsl

from tfkfp.components.common.platform.signals import EXEC_LAUNCH, exec_python, sigterm_raises


def test_sigterm_raises_inside_the_block_and_restores_the_handler_after():
    previous = signal.getsignal(signal.SIGTERM)
    stopped = f"^the step stopped by signal {int(signal.SIGTERM)}$"
    with pytest.raises(SystemExit, match=stopped), sigterm_raises("the step"):
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is previous


def test_exec_python_changes_the_command_once_and_refuses_one_it_does_not_know():
    @dsl.component
    def step(x: int) -> int:
        return x

    exec_python(step)
    (script,) = [p for p in step.component_spec.implementation.container.command
                 if "executor_main" in p]
    assert EXEC_LAUNCH in script
    with pytest.raises(ValueError, match="component step: expected one command element "
                                         "running '_KFP_RUNTIME=true python3 -m"):
        exec_python(step)


def test_every_step_that_starts_outside_work_execs_python():
    """train (TFJob, TrainJob, Vertex AI CustomJob), its GPU twin and vertex_batch_predict,
    in the components and in the committed training YAML."""
    import compiled_step

    from tfkfp.components.batch_predict.component import vertex_batch_predict
    from tfkfp.components.train.component import gpu_train, train
    from tfkfp.pipelines import registry

    for component in (train, gpu_train(), vertex_batch_predict):
        command = component.component_spec.implementation.container.command
        assert any(EXEC_LAUNCH in part for part in command), component.name
    spec = compiled_step.load(registry.golden_path("training"))
    command = spec["deploymentSpec"]["executors"]["exec-train"]["container"]["command"]
    assert any(EXEC_LAUNCH in part for part in command), "training.yaml: exec-train"
