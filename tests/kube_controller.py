"""A real kube-apiserver with training-job resources registered, and the controller's part
played by the test: tests of the tfjob and trainjob launchers read the job the launcher
created and write its status, as the Training Operator or Kubeflow Trainer would."""

import contextlib
import os
import subprocess
import threading
import time
import traceback
from types import ModuleType
from typing import Iterator

import kube_apiserver
import pytest
import upstream_schemas
from cluster_tools import run, tool


@contextlib.contextmanager
def cluster(work, namespace: str, crds, manifests=()) -> Iterator[str]:
    """An API server with these CRDs (files) registered, a namespace and other manifests
    (files) applied; KUBECONFIG points at it meanwhile. Yields the kubeconfig's path."""
    with kube_apiserver.running(work) as path:
        kubectl = [tool("kubectl"), "--kubeconfig", path]
        run([*kubectl, "create", "namespace", namespace])
        for crd in crds:  # create: upstream CRDs outgrow apply's last-applied annotation
            run([*kubectl, "create", "-f", crd])
        _wait_established(kubectl)
        for manifest in manifests:
            run([*kubectl, "apply", "-f", manifest])
        previous = os.environ.get("KUBECONFIG")
        os.environ["KUBECONFIG"] = str(path)
        try:
            yield str(path)
        finally:
            if previous is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = previous


@contextlib.contextmanager
def cluster_with(tmp_path_factory, namespace: str, schemas, manifests=()) -> Iterator[str]:
    """``cluster`` in a fresh folder, with the CRDs of these upstream_schemas names
    registered: what a test module's ``kubeconfig`` fixture yields."""
    work = tmp_path_factory.mktemp("apiserver")
    crds = upstream_schemas.write(schemas, work / "crds")
    with cluster(work, namespace, crds, manifests) as path:
        yield path


def kubeconfig_fixture(namespace: str, schemas):
    """A test module's ``kubeconfig`` fixture: ``cluster_with`` these upstream_schemas names,
    for the module's tests."""

    @pytest.fixture(scope="module")
    def kubeconfig(tmp_path_factory):
        with cluster_with(tmp_path_factory, namespace, schemas) as path:
            yield path

    return kubeconfig


def _wait_established(kubectl) -> None:
    """Until every CRD is established. ``kubectl wait`` fails at once, not waits, on a CRD
    the API server has not yet given conditions (a large one takes a moment)."""
    wait = [*kubectl, "wait", "--for=condition=established", "--timeout=60s", "crd", "--all"]
    for _ in range(60):
        if subprocess.run(wait, capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    run(wait)  # fails the test with kubectl's own message


class Controller:
    """The controller's part for one resource: find the job, write its status. A subclass
    names the resource's ``namespace`` and ``resource_module``, the module whose GROUP,
    VERSION and PLURAL name it."""

    namespace: str
    resource_module: ModuleType

    def __init__(self, kubeconfig: str):
        from kubernetes import client, config

        self.api = config.new_client_from_config(kubeconfig)
        self.objects = client.CustomObjectsApi(self.api)
        module = self.resource_module
        self.resource = (module.GROUP, module.VERSION, module.PLURAL)

    def job(self, name):
        group, version, plural = self.resource
        return self.objects.get_namespaced_custom_object(group, version, self.namespace,
                                                         plural, name)

    def wait_for(self, name, timeout=120):
        from kubernetes import client

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return self.job(name)
            except client.ApiException as err:
                if err.status != 404:
                    raise
            time.sleep(0.2)
        raise AssertionError(f"{self.resource[2]} {name} was never created")

    def exists(self, name):
        from kubernetes import client

        try:
            self.job(name)
            return True
        except client.ApiException as err:
            if err.status == 404:
                return False
            raise

    def replace_status(self, name, status):
        group, version, plural = self.resource
        body = self.job(name)
        body["status"] = status
        self.objects.replace_namespaced_custom_object_status(group, version, self.namespace,
                                                             plural, name, body)

    def play(self, name, act):
        """Run ``act(job)`` in a thread once the job exists; re-raise its failure later."""
        errors = []

        def target():
            try:
                act(self.wait_for(name))
            except BaseException as err:  # noqa: BLE001 - reported by check()
                traceback.print_exc()  # the launcher may still be waiting: show it now
                errors.append(err)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()

        def check():
            thread.join(timeout=300)
            if errors:
                raise errors[0]

        return check


def job_options(namespace: str, tmp_path, name: str, **more) -> dict:
    """A launcher's launcher_options for job ``name`` in ``namespace``: the shared volume
    mounted at ``tmp_path``/shared, the job's folder in it, a quick poll."""
    shared = tmp_path / "shared"
    return {"namespace": namespace, "job_name": name, "volume_claim": "shared-data",
            "mount_path": str(shared), "job_dir": str(shared / name), "poll_seconds": 0.2,
            **more}


def cancel_step(controller: Controller, kubeconfig: str, launcher: str, data: str,
                outputs: str, launcher_options: dict, job: str) -> str:
    """Run the train step of the compiled training pipeline with ``launcher`` (its command
    from the YAML: ``sh -ec`` running Python), its outputs under ``outputs``; SIGTERM its top
    process once its job exists (what kubelet does to a cancelled step's pod) and return its
    output. The step must have failed."""
    import pathlib

    import compiled_step

    from tfkfp.pipelines import registry

    spec = compiled_step.load(registry.golden_path("training"))
    root = pathlib.Path(outputs)
    root.mkdir(parents=True, exist_ok=True)
    executor = compiled_step.executor_input(
        spec, "comp-train", root, {"launcher": launcher, "launcher_options": launcher_options},
        {"dataset": data})
    step = compiled_step.start(spec, "comp-train", executor, env={"KUBECONFIG": kubeconfig})
    try:
        controller.wait_for(job)
    except BaseException:
        compiled_step.kill_group(step)
        raise
    out = compiled_step.terminate(step)
    assert step.returncode != 0, out[-3000:]
    return out


class LauncherContract:
    """What every job launcher's step does when cancelled or when its job cannot be created.
    A launcher's test module subclasses it as a ``Test...`` class naming the ``controller``
    (a Controller subclass) that plays its job's part, the ``launcher``, the ``error`` its
    step fails with, and ``missing_namespace``, the message (a regular expression) when the
    job's namespace does not exist. The module provides the ``kubeconfig`` fixture."""

    controller: type[Controller]
    launcher: str
    error: type
    missing_namespace: str

    def test_cancelling_the_step_deletes_the_job(self, kubeconfig, demo_dataset, tmp_path):
        """``cancel_step`` on job ``cancel``: the step says it was stopped by the signal,
        and the job is gone."""
        controller = self.controller(kubeconfig)
        out = cancel_step(controller, kubeconfig, self.launcher, demo_dataset,
                          str(tmp_path / "model"),
                          job_options(controller.namespace, tmp_path, "cancel"), "cancel")
        assert "stopped by signal" in out, out[-3000:]
        assert not controller.exists("cancel")

    def test_a_job_that_cannot_be_created_says_why(self, kubeconfig, demo_dataset, tmp_path):
        """Its job ``lost`` in namespace ``nowhere``, which does not exist: the step fails
        with ``error`` matching ``missing_namespace``."""
        from tfkfp.components.train.core import train

        with pytest.raises(self.error, match=self.missing_namespace):
            train(demo_dataset, str(tmp_path / "model"), launcher=self.launcher,
                  launcher_options=job_options("nowhere", tmp_path, "lost"))


def past_its_deadline(controller: Controller, launcher: str, data: str, tmp_path, act,
                      error: type, match: str) -> None:
    """Train with ``launcher`` and a 2 s deadline on job ``slow`` while ``act(job)`` plays
    the controller, which never finishes it: the step fails with ``error`` matching
    ``match``, and the job is deleted."""
    from tfkfp.components.train.core import train

    check = controller.play("slow", act)
    with pytest.raises(error, match=match):
        train(data, str(tmp_path / "model"), launcher=launcher, launcher_options=job_options(
            controller.namespace, tmp_path, "slow", deadline_seconds=2))
    check()
    assert not controller.exists("slow")
