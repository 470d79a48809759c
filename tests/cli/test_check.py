"""`tfkfp check`: compiled pipelines against a cluster overlay (pipelines/lint.py), a line per
problem naming the file, the step or parameter, the value and the limit."""

import pathlib
import subprocess
import sys
import textwrap

import pytest

from tfkfp.cli.main import main
from tfkfp.components._image import IMAGE
from tfkfp.pipelines import lint
from tfkfp.pipelines.overlays import Cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMITTED = sorted(str(p) for p in (ROOT / "pipelines").glob("*.yaml"))
TRAINING = str(ROOT / "pipelines" / "training.yaml")
# batch_prediction needs a Dataset or a CSV from the run: the value a CI job would pass.
RUN_DATA = ["--set", "dataset_uri=gs://bucket/dataset"]


def overlay(tmp_path, images=(IMAGE,), accounts=("tfkfp-replica",), cpu_max="32",
            memory_max="128Gi", extra=""):
    """A small rendered overlay, written by hand: allow-list, LimitRange, ResourceQuota."""
    listed = "".join(f"\n    {i}" for i in images)
    named = "".join(f"\n    {a}" for a in accounts)
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: tfkfp-config, namespace: ml}
        data:
          replicaImages: |%s
          replicaServiceAccounts: |%s
        ---
        apiVersion: v1
        kind: LimitRange
        metadata: {name: ml-defaults, namespace: ml}
        spec:
          limits:
            - type: Container
              default: {cpu: "1", memory: 2Gi, ephemeral-storage: 20Gi}
              defaultRequest: {cpu: 500m, memory: 1Gi, ephemeral-storage: 10Gi}
              max: {cpu: "%s", memory: %s, ephemeral-storage: 200Gi}
        ---
        apiVersion: v1
        kind: ResourceQuota
        metadata: {name: ml-total, namespace: ml}
        spec:
          hard: {requests.cpu: "64", limits.memory: 256Gi, pods: "100"}
        """) % (listed, named, cpu_max, memory_max) + extra)
    return str(path)


def check(*args, capsys):
    code = main(["check", *args])
    return code, capsys.readouterr().out.strip().splitlines()


def test_the_committed_pipelines_pass_a_cluster_that_admits_them(tmp_path, capsys):
    code, lines = check(*COMMITTED, "--overlay", overlay(tmp_path), *RUN_DATA, capsys=capsys)
    assert (code, lines) == (0, [f"OK: 6 pipeline(s), images, LimitRange, ResourceQuota and "
                                 f"parameters against {tmp_path / 'cluster.yaml'}"])


def test_a_step_over_the_limitrange_is_refused_naming_step_value_and_limit(tmp_path, capsys):
    code, lines = check(TRAINING, "--overlay", overlay(tmp_path, cpu_max="2"), capsys=capsys)
    assert code == 1
    assert f"{TRAINING}: step train: cpu limit 4 is above the LimitRange's Container max 2" \
        in lines
    assert f"{TRAINING}: step shard-tfrecords: cpu limit 4 is above the LimitRange's " \
        "Container max 2" in lines
    assert not any("step export-tflite" in line for line in lines)  # 2 CPUs: within
    assert lines[-1].startswith("tfkfp check: ") and "problem(s) in 1 pipeline(s)" in lines[-1]


def test_an_image_outside_the_allow_list_is_refused(tmp_path, capsys):
    cluster = overlay(tmp_path, images=["registry.example/ml/tfkfp:0.1.0"])
    code, lines = check(TRAINING, "--overlay", cluster, capsys=capsys)
    assert code == 1
    assert (f"{TRAINING}: step train: image '{IMAGE}' is not in the allow-list of {cluster} "
            "(ConfigMap tfkfp-config, key replicaImages: registry.example/ml/tfkfp:0.1.0); "
            "list it there, or compile with --image set to one that is") in lines


def test_a_pipeline_compiled_for_a_digest_passes_only_where_that_digest_is_listed(
        tmp_path, capsys):
    repository = "europe-docker.pkg.dev/acme/ml/tfkfp"
    pinned = f"{repository}:0.1.0@sha256:{'ab' * 32}"
    assert main(["compile", "--image", pinned, "--out", str(tmp_path / "out")]) == 0
    compiled = str(tmp_path / "out" / "training.yaml")
    code, lines = check(compiled, "--overlay", overlay(tmp_path, images=(pinned,)),
                        capsys=capsys)
    assert code == 0, lines
    # the tag alone does not admit the digest: a tag can be pushed again
    code, lines = check(compiled, "--overlay", overlay(tmp_path, images=(f"{repository}"
                                                                          ":0.1.0",)),
                        capsys=capsys)
    assert code == 1 and f"image {pinned!r} is not in the allow-list" in "\n".join(lines)


def test_a_replica_image_or_account_outside_the_allow_list_is_refused(tmp_path, capsys):
    code, lines = check(TRAINING, "--overlay", overlay(tmp_path), "--set", "launcher=tfjob",
                        "--set", 'launcher_options={"image": "evil/miner:1", '
                        '"service_account": "admin"}', capsys=capsys)
    assert code == 1
    assert lines[:2] == [
        f"{TRAINING}: parameters: launcher_options image 'evil/miner:1' is not in the "
        f"allow-list of {tmp_path / 'cluster.yaml'} (ConfigMap tfkfp-config, key "
        f"replicaImages: {IMAGE})",
        f"{TRAINING}: parameters: launcher_options service_account 'admin' is not in the "
        f"allow-list of {tmp_path / 'cluster.yaml'} (ConfigMap tfkfp-config, key "
        "replicaServiceAccounts: tfkfp-replica)"]


@pytest.mark.parametrize("sets, message", [
    (["quantization=int3"], "pipeline 'training': quantization 'int3' is not one of none, "
                            "dynamic, float16, int8, int16x8, auto (step freeze_quantize)"),
    (["epochs=x"], "--set epochs='x': epochs takes a value of type Integer, e.g. epochs=8"),
    (["input_uri=data.csv"], "pipeline 'training': input_uri 'data.csv' is a path on this "
                             "machine, which the run's pods cannot reach"),
])
def test_a_bad_parameter_is_refused(sets, message, capsys):
    code, lines = check(TRAINING, *[a for s in sets for a in ("--set", s)], capsys=capsys)
    assert code == 1
    assert lines[0].startswith(f"{TRAINING}: parameters: {message}"), lines


def test_a_bad_default_compiled_into_the_yaml_is_refused(tmp_path, capsys):
    compiled = tmp_path / "training.yaml"
    head, _, tail = pathlib.Path(TRAINING).read_text().rpartition("defaultValue: jsonl")
    compiled.write_text(head + "defaultValue: xml" + tail)  # the root's, after the steps'
    code, lines = check(str(compiled), capsys=capsys)
    assert code == 1 and lines[0] == (
        f"{compiled}: parameters: pipeline 'training': output_format 'xml' is not one of "
        "jsonl, csv, tfrecord (step batch_predict)")


def test_a_set_no_pipeline_takes_is_refused(capsys):
    code, lines = check(TRAINING, "--set", "epoch=3", capsys=capsys)
    assert code == 1 and lines[0].startswith("--set: epoch=3: no pipeline given takes this "
                                             "parameter; they take batch_size")


def test_limit_request_ratio_min_and_quota_limits_are_checked(tmp_path, capsys):
    cluster = overlay(tmp_path, extra=textwrap.dedent("""\
        ---
        apiVersion: v1
        kind: LimitRange
        metadata: {name: strict, namespace: ml}
        spec:
          limits:
            - type: Container
              min: {cpu: 300m}
              maxLimitRequestRatio: {ephemeral-storage: "1"}
        ---
        apiVersion: v1
        kind: ResourceQuota
        metadata: {name: gpus, namespace: ml}
        spec:
          hard: {limits.nvidia.com/gpu: "4", requests.memory: 10Gi}
        """))
    code, lines = check(TRAINING, "--overlay", cluster, capsys=capsys)
    step = f"{TRAINING}: step fingerprint-input: "
    assert code == 1
    assert step + "cpu request 250m is below the LimitRange's Container min 300m" in lines
    assert (step + "ephemeral-storage limit 20Gi is more than 1 times its request 10Gi (the "
            "LimitRange's maxLimitRequestRatio)") in lines
    assert (step + "sets no nvidia.com/gpu limit, which ResourceQuota gpus "
            "(limits.nvidia.com/gpu) needs of every container") in lines
    assert (f"{TRAINING}: step train: memory request 16Gi is above ResourceQuota gpus's "
            "requests.memory 10Gi") in lines


def test_a_request_above_the_default_limit_is_refused():
    """A step that requests more than the LimitRange's default limit and sets no limit of
    its own: the API server refuses the pod (request above limit)."""
    cluster = Cluster("c.yaml", None, None, [{"type": "Container",
                                              "default": {"memory": "1Gi"}}], [])
    container = lint.admitted({"resourceMemoryRequest": "2Gi"}, cluster)
    assert container.limits == {"memory": "1Gi"} and container.requests == {"memory": "2Gi"}
    assert lint._limit_problems(container, cluster) == [
        "memory request 2Gi is above its limit 1Gi (the LimitRange's default limit, as the "
        "step sets none)"]


def test_an_overlay_folder_of_rendered_files_is_read(tmp_path, capsys):
    folder = tmp_path / "rendered"
    folder.mkdir()
    for number, document in enumerate(pathlib.Path(overlay(tmp_path, cpu_max="2"))
                                      .read_text().split("---\n")):
        (folder / f"{number}.yaml").write_text(document)
    code, lines = check(TRAINING, "--overlay", str(folder), capsys=capsys)
    assert code == 1 and any("cpu limit 4 is above" in line for line in lines)


def test_an_unrendered_kustomize_overlay_is_refused_saying_how_to_render_it(capsys):
    kind = str(ROOT / "manifests" / "overlays" / "kind")
    assert main(["check", TRAINING, "--overlay", kind]) == 1
    assert capsys.readouterr().err.strip() == (
        f"tfkfp check: error: --overlay {kind} is a kustomize overlay, not rendered YAML: "
        f"render it first (kustomize build {kind} > cluster.yaml, or kubectl kustomize "
        f"{kind} > cluster.yaml) and check against that")


def test_a_file_that_is_not_a_compiled_pipeline_is_refused(tmp_path, capsys):
    other = tmp_path / "cluster.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\n")
    code, lines = check(str(other), capsys=capsys)
    assert code == 1 and lines[0] == (f"{other}: file: not a compiled pipeline (no "
                                      "deploymentSpec); give the YAML `tfkfp compile` writes")


def test_check_imports_neither_tensorflow_nor_numpy(tmp_path):
    poisoned = ("import sys\n"
                "for name in ('tensorflow', 'numpy', 'pyarrow', 'pandas', 'keras'):\n"
                "    sys.modules[name] = None\n"
                "from tfkfp.cli.main import main\n"
                "sys.exit(main(sys.argv[1:]))\n")
    result = subprocess.run([sys.executable, "-c", poisoned, "check", *COMMITTED,
                             "--overlay", overlay(tmp_path), *RUN_DATA, "--set", "epochs=3"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("OK: 6 pipeline(s)")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The committed overlays rendered by `kubectl kustomize` (a cluster tool)."""
    from cluster_tools import run, tool

    kubectl = tool("kubectl")
    out = tmp_path_factory.mktemp("overlays")
    paths = {}
    for name in ("gke", "onprem", "kind"):
        paths[name] = out / f"{name}.yaml"
        paths[name].write_text(run([kubectl, "kustomize",
                                    ROOT / "manifests" / "overlays" / name]).stdout)
    return paths


@pytest.mark.parametrize("name", ["gke", "onprem"])
def test_the_committed_pipelines_pass_the_cluster_overlays(name, rendered, capsys):
    code, lines = check(*COMMITTED, "--overlay", str(rendered[name]), *RUN_DATA,
                        capsys=capsys)
    assert (code, lines[0][:3]) == (0, "OK:"), lines


def test_the_kind_overlay_admits_the_kind_sizes_and_refuses_the_cluster_sizes(
        rendered, tmp_path, capsys):
    assert main(["compile", "--sizes", "kind", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    kind_sized = sorted(str(p) for p in tmp_path.glob("*.yaml"))
    code, lines = check(*kind_sized, "--overlay", str(rendered["kind"]), *RUN_DATA,
                        capsys=capsys)
    assert (code, lines[0][:3]) == (0, "OK:"), lines
    code, lines = check(TRAINING, "--overlay", str(rendered["kind"]), capsys=capsys)
    assert code == 1
    assert f"{TRAINING}: step train: memory limit 16Gi is above the LimitRange's Container " \
        "max 8Gi" in lines


def test_pipelines_compiled_with_the_stores_secret_give_every_step_its_keys(
        rendered, tmp_path, capsys):
    """`--store-secret` puts KFP's artifact-store keys into every step's environment (KFP's
    secretAsEnv, optional), the endpoint too; the overlays still admit every step."""
    import yaml

    assert main(["compile", "--sizes", "kind", "--store-secret", "mlpipeline-minio-artifact",
                 "--store-endpoint", "http://minio-service.kubeflow:9000",
                 "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    for path in sorted(tmp_path.glob("*.yaml")):
        spec, platform = yaml.safe_load_all(path.read_text())
        containers = {label for label, e in spec["deploymentSpec"]["executors"].items()
                      if "container" in e}
        executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
        assert set(executors) == containers, path.name
        for label in containers:
            (secret,) = executors[label]["secretAsEnv"]
            assert secret == {"secretName": "mlpipeline-minio-artifact", "optional": True,
                              "keyToEnv": [
                                  {"secretKey": "accesskey", "envVar": "AWS_ACCESS_KEY_ID"},
                                  {"secretKey": "secretkey",
                                   "envVar": "AWS_SECRET_ACCESS_KEY"}]}
            env = spec["deploymentSpec"]["executors"][label]["container"]["env"]
            assert {"name": "AWS_ENDPOINT_URL",
                    "value": "http://minio-service.kubeflow:9000"} in env
    code, lines = check(*sorted(str(p) for p in tmp_path.glob("*.yaml")), "--overlay",
                        str(rendered["kind"]), *RUN_DATA, capsys=capsys)
    assert (code, lines[0][:3]) == (0, "OK:"), lines


@pytest.mark.parametrize("args, message", [
    (["--store-secret", "Not_A_Name"], "store secret 'Not_A_Name' is not a Kubernetes Secret"),
    (["--store-endpoint", "http://minio:9000"], "--store-endpoint needs --store-secret"),
    (["--store-secret", "s", "--store-endpoint", "minio:9000"],
     "store endpoint 'minio:9000' is not a URL"),
])
def test_a_store_setting_no_pod_could_use_is_refused_before_compiling(args, message,
                                                                      tmp_path, capsys):
    assert main(["compile", *args, "--out", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
