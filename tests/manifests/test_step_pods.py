"""Every compiled pipeline step is a pod that each overlay's namespace admits.

A real kube-apiserver with the LimitRanger and ResourceQuota admission plugins gets an
overlay's Namespace, LimitRange and ResourceQuota objects; then each step of each compiled
pipeline (the committed YAML for gke and onprem, ``--sizes kind`` for kind) becomes a Pod with
the step's image and resources, created with ``--dry-run=server``. The admitted Pod shows what
the LimitRange filled in: every step's local disk (ephemeral storage) comes from there.
"""

import json
import pathlib
import subprocess

import kube_apiserver
import pytest
import yaml

from tfkfp.pipelines import registry, resources

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAMESPACE_KINDS = ("Namespace", "LimitRange", "ResourceQuota")


def compiled_steps(spec):
    """(executor label, image, resources) of every container step of a compiled pipeline."""
    for label, executor in sorted(spec["deploymentSpec"]["executors"].items()):
        if "container" in executor:
            container = executor["container"]
            yield label, container["image"], container.get("resources", {})


def pod(name, namespace, image, compiled):
    """The step's pod as the KFP backend makes it, reduced to what admission looks at."""
    want = {"requests": {"cpu": "resourceCpuRequest", "memory": "resourceMemoryRequest"},
            "limits": {"cpu": "resourceCpuLimit", "memory": "resourceMemoryLimit"}}
    resources_ = {kind: {r: compiled[key] for r, key in keys.items() if key in compiled}
                  for kind, keys in want.items()}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"automountServiceAccountToken": False, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": image,
                                     "resources": {k: v for k, v in resources_.items() if v}}]}}


def namespace_objects(docs, namespace):
    """The overlay's Namespace, LimitRange and ResourceQuota objects, moved into a namespace
    of the test's (gke and onprem both use ``tfkfp``)."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    for doc in docs:
        if doc["kind"] in NAMESPACE_KINDS[1:]:
            doc = json.loads(json.dumps(doc))
            doc["metadata"]["namespace"] = namespace
            objects.append(doc)
    return objects


@pytest.fixture(scope="module")
def api_server(tools, tmp_path_factory):
    for name in ("kubectl", "etcd", "openssl"):
        tools.tool(name)
    with kube_apiserver.running(tmp_path_factory.mktemp("k8s")) as kubeconfig:
        yield [tools.tool("kubectl"), "--kubeconfig", str(kubeconfig)]


@pytest.fixture(scope="module")
def kind_pipelines(tmp_path_factory):
    out = tmp_path_factory.mktemp("kind-sizes")
    return {name: registry.compile_pipeline(name, str(out / f"{name}.yaml"), sizes="kind")
            for name in registry.names()}


def prepare(api_server, tools, rendered, overlay, tmp_path, used=None):
    """Apply the overlay's namespace objects in a namespace of its own, its quotas' use at
    ``used`` (none by default); the namespace its steps run in."""
    namespace = f"{overlay}-{'used' if used else 'fresh'}"
    objects = namespace_objects(rendered[overlay][1], namespace)
    # No controller-manager runs: play its parts, the default ServiceAccount and the quotas'
    # status (a quota without status admits anything).
    objects.append({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": namespace}})
    path = tmp_path / f"{overlay}-namespace.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    tools.run([*api_server, "apply", "-f", path])
    for quota in (o for o in objects if o["kind"] == "ResourceQuota"):
        hard = quota["spec"]["hard"]
        status = {"status": {"hard": hard, "used": {k: "0" for k in hard} | (used or {})}}
        tools.run([*api_server, "-n", namespace, "patch", "resourcequota",
                   quota["metadata"]["name"], "--subresource=status", "--type=merge",
                   "-p", json.dumps(status)])
    return namespace


def dry_run(api_server, path):
    """The Pod as the server admitted it (None if refused), and the server's error."""
    result = subprocess.run([*api_server, "create", "--dry-run=server", "-o", "json", "-f",
                             str(path)], capture_output=True, text=True, timeout=120)
    if result.returncode:
        return None, result.stderr.strip()
    return json.loads(result.stdout), ""


def dry_run_train_step(api_server, tools, rendered, overlay, tmp_path, used=None):
    """``dry_run`` of the committed training pipeline's train step as a pod in a namespace
    ``prepare``d for ``overlay``."""
    namespace = prepare(api_server, tools, rendered, overlay, tmp_path, used)
    spec = next(yaml.safe_load_all(pathlib.Path(registry.golden_path("training")).read_text()))
    (train,) = [s for s in compiled_steps(spec) if s[0] == "exec-train"]
    manifest = tmp_path / "train.yaml"
    manifest.write_text(yaml.safe_dump(pod("train", namespace, train[1], train[2])))
    return dry_run(api_server, manifest)


def pipeline_files(overlay, kind_pipelines):
    if resources.OVERLAY_PROFILES[overlay] == "kind":
        return {name: pathlib.Path(path) for name, path in kind_pipelines.items()}
    return {name: pathlib.Path(registry.golden_path(name)) for name in registry.names()}


@pytest.mark.slow
@pytest.mark.parametrize("overlay", ("gke", "onprem", "kind"))
def test_every_compiled_step_is_admitted_by_the_overlays_namespace(
        overlay, api_server, tools, rendered, kind_pipelines, tmp_path):
    profile = resources.OVERLAY_PROFILES[overlay]
    namespace = prepare(api_server, tools, rendered, overlay, tmp_path)
    refused, checked = [], 0
    for pipeline, path in pipeline_files(overlay, kind_pipelines).items():
        spec = next(yaml.safe_load_all(path.read_text()))
        for label, image, compiled in compiled_steps(spec):
            where = f"{overlay}: {path.name} {label}"
            for key in ("resourceCpuRequest", "resourceCpuLimit", "resourceMemoryRequest",
                        "resourceMemoryLimit"):
                assert key in compiled, f"{where} has no {key} in its compiled resources"
            name = f"{pipeline.replace('_', '-')}-{label}"
            manifest = tmp_path / f"{name}.yaml"
            manifest.write_text(yaml.safe_dump(pod(name, namespace, image, compiled)))
            admitted, answer = dry_run(api_server, manifest)
            checked += 1
            if admitted is None:
                refused.append(f"{where}: {answer}")
                continue
            got = admitted["spec"]["containers"][0]["resources"]
            disk = (got["requests"].get("ephemeral-storage"),
                    got["limits"].get("ephemeral-storage"))
            assert disk == (resources.DISK_REQUEST[profile], resources.DISK[profile]), (
                f"{where}: the LimitRange gave it {disk} (request, limit) of local disk; "
                f"pipelines/resources.py says {resources.DISK_REQUEST[profile]}, "
                f"{resources.DISK[profile]}")
    assert checked >= 15, f"{overlay}: only {checked} steps found"
    assert not refused, "the API server refused steps:\n" + "\n".join(refused)


@pytest.mark.slow
def test_the_cluster_sized_train_step_is_refused_on_kind(api_server, tools, rendered, tmp_path):
    """Why kind has its own sizes: its LimitRange refuses the cluster-sized train pod, so the
    admission check bites."""
    admitted, answer = dry_run_train_step(api_server, tools, rendered, "kind", tmp_path)
    assert admitted is None, "kind admitted a 4-CPU, 16Gi train pod"
    assert "maximum memory usage per Container is 8Gi" in answer, answer


@pytest.mark.slow
def test_a_namespace_whose_quota_is_spent_refuses_the_train_step(api_server, tools, rendered,
                                                                  tmp_path):
    """The ResourceQuota admission plugin is on and the quota's status is what it reads."""
    admitted, answer = dry_run_train_step(api_server, tools, rendered, "gke", tmp_path,
                                          used={"requests.cpu": "62"})
    assert admitted is None, "a namespace with 2 of its 64 CPUs left admitted a 4-CPU pod"
    assert "exceeded quota: tfkfp-total" in answer, answer
