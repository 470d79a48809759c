"""A real kube-apiserver with training-job resources registered, and the controller's part
played by the test: tests of the tfjob and trainjob launchers read the job the launcher
created and write its status, as the Training Operator or Kubeflow Trainer would."""

import contextlib
import os
import subprocess
import threading
import time
import traceback
from typing import Iterator

import kube_apiserver
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
    """The controller's part for one resource: find the job, write its status."""

    def __init__(self, kubeconfig: str, namespace: str, group: str, version: str,
                 plural: str):
        from kubernetes import client, config

        self.api = config.new_client_from_config(kubeconfig)
        self.objects = client.CustomObjectsApi(self.api)
        self.namespace, self.resource = namespace, (group, version, plural)

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
