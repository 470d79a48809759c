"""A local run's tasks, and the workers they start, die with the process running the pipeline,
even when it is SIGKILLed (before, a task was reparented to PID 1 and ran to completion)."""

import os
import signal
import subprocess
import sys
import threading

import pytest
from kfp import dsl
from process_tree import command_lines, descendants, wait_until_gone

from conftest import write_csv
from tfkfp.cli import local_run, local_tasks
from tfkfp.components.shard_tfrecords.publish import SPOOL_PREFIX

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="parent-death signals are Linux's")


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def lineage() -> str:
    import ctypes
    import os

    got = ctypes.c_int()
    ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0)  # PR_GET_PDEATHSIG
    return f"{os.getppid()} {got.value}"


@dsl.pipeline(name="lineage")
def lineage_pipeline() -> str:
    return lineage().output


def test_a_task_is_this_processs_own_child_and_gets_sigterm_when_it_dies(tmp_path):
    run = local_run.run_pipeline(lineage_pipeline, {}, str(tmp_path))
    assert run.outputs["Output"] == f"{os.getpid()} {int(signal.SIGTERM)}"


def kfp_command(component, python="/venv/bin/python"):
    """The command kfp.local's SubprocessRunner hands run_local_subprocess."""
    from kfp.local.subprocess_task_handler import replace_python_executable

    container = component.component_spec.implementation.container
    return replace_python_executable([*container.command, *container.args], python)


def test_the_shells_exec_the_executor_and_leave_the_components_source_alone():
    command = kfp_command(lineage)
    launch = next(i for i, part in enumerate(command) if local_tasks.EXECUTOR_MODULE in part)
    rewritten = local_tasks.exec_python(command)
    assert "_KFP_RUNTIME=true exec /venv/bin/python -m kfp.dsl.executor_main" in rewritten[launch]
    assert rewritten[:launch] + rewritten[launch + 1:] == command[:launch] + command[launch + 1:]
    assert local_tasks.exec_python(rewritten) == rewritten  # exec'd once, not twice


def test_kfps_pip_install_wrapper_execs_the_inner_shell_too():
    wrapped = dsl.component(lineage.python_func, base_image="python:3.11",
                            packages_to_install=["six"])
    rewritten = local_tasks.exec_python(kfp_command(wrapped))
    assert any('&& exec "$0" "$@"' in part for part in rewritten)
    assert not any('&& "$0" "$@"' in part for part in rewritten)


def test_a_command_that_does_not_launch_the_executor_is_refused():
    with pytest.raises(RuntimeError, match="has kfp changed how it launches"):
        local_tasks.exec_python(["sh", "-c", "echo hi"])


def start_and_wait_for(command, marker, env):
    """Start command; return it once a line of its output contains marker."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
    watchdog = threading.Timer(300, process.kill)  # a hung start fails the test, not CI
    watchdog.start()
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if marker in line:
                return process
        raise AssertionError(f"never saw {marker!r}:\n{''.join(seen)[-3000:]}")
    finally:
        watchdog.cancel()


def sigkill_and_check_everything_below_dies(process):
    """SIGKILL process and wait for every process below it to end; those that were below."""
    below = descendants(process.pid)
    assert below, "the run had no task process running"
    process.kill()
    process.wait()
    left = wait_until_gone(below)
    shown = command_lines(left)
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # don't leave them to the next test
    assert left == [], shown
    return below


@pytest.mark.slow
def test_sigkill_of_tfkfp_run_ends_its_running_task_which_cleans_up(tmp_path):
    temp = tmp_path / "tmp"  # the shard task's spool folder goes here
    temp.mkdir()
    data = write_csv(tmp_path / "in.csv", ["id", "x", "animal"],
                     [[i, i * 0.5, ("cat", "dog")[i % 2]] for i in range(200)])
    run = start_and_wait_for(
        [sys.executable, "-m", "tfkfp.cli.main", "run", "training", "--local",
         "--verbose", "--set", f"input_uri={data}", "--set", "label=animal",
         "--pipeline-root", str(tmp_path / "runs")],
        "tfkfp: paused at encoding", {"TFKFP_TEST_PAUSE_AT": "encoding", "TMPDIR": str(temp)})
    assert spools(temp), "the shard task had no spool folder"
    sigkill_and_check_everything_below_dies(run)
    assert spools(temp) == []  # SIGTERM let the task remove its scratch folder


def spools(temp):
    """The spool folders in temp, or in a run's temp folder there (the tasks' TMPDIR)."""
    return [path.name for path in [*temp.glob(f"{SPOOL_PREFIX}*"),
                                   *temp.glob(f"{local_tasks.RUN_TEMP_PREFIX}*/{SPOOL_PREFIX}*")]]


# A pipeline whose task starts a worker, as train's local launcher does, and blocks.
HOLDING = '''
import sys
from kfp import dsl
from tfkfp.cli import local_run


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def hold():
    import sys
    import time
    from tfkfp.components.common.platform import lifeline

    worker = lifeline.popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"holding, worker {worker.pid}", flush=True)
    time.sleep(600)


@dsl.pipeline(name="holding")
def holding():
    hold()


local_run.run_pipeline(holding, {}, sys.argv[1], verbose=True)
'''


@pytest.mark.slow
def test_sigkill_of_the_runner_ends_a_task_and_the_worker_it_started(tmp_path):
    script = tmp_path / "holding.py"
    script.write_text(HOLDING)
    run = start_and_wait_for([sys.executable, str(script), str(tmp_path / "runs")],
                             "holding, worker", {})
    below = sigkill_and_check_everything_below_dies(run)
    assert len(below) == 2, command_lines(below)  # the task (exec'd by its shell), its worker
