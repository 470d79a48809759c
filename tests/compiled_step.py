"""One step of a compiled pipeline (or component) YAML, run as a KFP pod runs it: the
container's command and args verbatim, the ``{{$}}`` placeholder replaced by the executor
input that KFP's driver would give it. Its process group is its own, so a test can send
SIGTERM to the top process (what kubelet does to a cancelled step's container) and clean up
whatever is left."""

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any, Dict

import yaml


def load(path) -> Dict[str, Any]:
    """The pipeline spec of a compiled YAML (its first document)."""
    return next(yaml.safe_load_all(pathlib.Path(path).read_text()))


def executor_input(spec: Dict[str, Any], component: str, root: pathlib.Path,
                   parameters: Dict[str, Any], artifacts: Dict[str, str]) -> Dict[str, Any]:
    """What KFP passes the step of ``component`` (e.g. ``comp-train``): the given parameters
    over the defaults, input artifacts at the given URIs, every output under ``root``."""
    comp = spec["components"][component]
    inputs, outputs = comp.get("inputDefinitions", {}), comp.get("outputDefinitions", {})
    declared = inputs.get("parameters", {})
    values = {name: p["defaultValue"] for name, p in declared.items() if "defaultValue" in p}
    # The YAML writes integer defaults as 1.0; in the executor input, as KFP's driver
    # serialises it (protobuf JSON), a whole number is written 1.
    values.update({name: int(values[name]) for name, p in declared.items()
                   if p["parameterType"] == "NUMBER_INTEGER" and name in values})
    unknown = set(parameters) - set(declared)
    assert not unknown, f"{component} has no parameters {sorted(unknown)}"
    values.update(parameters)

    def artifact(name, kind, uri):
        return {"artifacts": [{"name": name, "type": kind, "uri": uri, "metadata": {}}]}

    return {
        "inputs": {
            "parameterValues": values,
            "artifacts": {name: artifact(name, inputs["artifacts"][name]["artifactType"], uri)
                          for name, uri in artifacts.items()}},
        "outputs": {
            "artifacts": {name: artifact(name, a["artifactType"], str(root / name))
                          for name, a in outputs.get("artifacts", {}).items()},
            "parameters": {name: {"outputFile": str(root / name)}
                           for name in outputs.get("parameters", {})},
            "outputFile": str(root / "executor_output.json")}}


def start(spec: Dict[str, Any], component: str, executor: Dict[str, Any],
          env: Dict[str, str] | None = None) -> subprocess.Popen:
    """Start the step: its container's command and args from the spec, ``python3`` being
    this interpreter (as in the image, where it is the one with tfkfp installed)."""
    label = spec["components"][component]["executorLabel"]
    container = spec["deploymentSpec"]["executors"][label]["container"]
    args = [arg.replace("{{$}}", json.dumps(executor)) for arg in container["args"]]
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return subprocess.Popen([*container["command"], *args],
                            env={**os.environ, **(env or {}), "PATH": path},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def wait_for(path: pathlib.Path, step: subprocess.Popen, timeout: float = 300) -> None:
    """Until the step has written ``path``; fails with its output if it ends first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if step.poll() is not None:
            raise AssertionError(f"the step exited {step.returncode} before writing {path}:\n"
                                 f"{step.stdout.read()[-4000:]}")
        if time.monotonic() > deadline:
            kill_group(step)
            raise AssertionError(f"the step did not write {path} in {timeout} s")
        time.sleep(0.05)


def terminate(step: subprocess.Popen, timeout: float = 120) -> str:
    """SIGTERM to the step's top process, as kubelet sends a cancelled step's container; its
    output once every process of the step has closed it. A step still running ``timeout``
    seconds later fails the test (the signal did not reach the code that handles it)."""
    step.send_signal(signal.SIGTERM)
    try:
        out, _ = step.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the step was still running {timeout} s after SIGTERM to its "
                             "top process: the signal did not reach Python") from None
    finally:
        kill_group(step)
    return out


def kill_group(step: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the step's process group (its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(step.pid, signal.SIGKILL)
    step.wait()
