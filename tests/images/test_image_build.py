"""Builds the CPU image for real and runs it (slow; needs root, Docker's engine and
mmdebstrap, installed by .ci/install-cluster-tools).

No registry can be reached here, so a private dockerd (loopback only) builds from a Debian
bookworm base made by mmdebstrap and tagged as the Dockerfile's FROM, as
shared/k8s/README.md describes. The daemon's data and the base live in the cache folder outside
the clone (~/.cache/tfkfp-k8s/docker), so a rerun reuses the dependency layer and only
reinstalls the checkout (about a minute instead of several)."""

import json
import os
import pathlib
import subprocess
import time

import pytest
import yaml

from tfkfp.components._image import IMAGE, __version__

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = "python:3.11-slim-bookworm"  # the tag images/cpu/Dockerfile pins by digest
DEBIAN_BASE = "local/debian-py:bookworm"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def docker_ok(client, env):
    return subprocess.run([client, "info"], env=env, capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def docker(tools):
    """An environment (DOCKER_HOST) whose Docker daemon builds and runs images."""
    client = tools.tool("docker")
    if docker_ok(client, os.environ):  # the developer's own daemon (DOCKER_HOST or default)
        yield client, dict(os.environ), False
        return
    dockerd = tools.tool("dockerd")
    if os.geteuid() != 0:
        tools.missing("a private dockerd needs root")
    folder = tools.cache / "docker"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DOCKER_HOST": f"unix://{folder}/docker.sock"}
    process = None
    if not docker_ok(client, env):
        log = open(folder / "dockerd.log", "a")
        process = subprocess.Popen(
            [dockerd, "--iptables=false", "--ip-forward=false", "--bridge=none",
             "--data-root", folder / "root", "--exec-root", "/run/tfkfp-dockerd",
             "-H", env["DOCKER_HOST"], "--pidfile", folder / "docker.pid"],
            stdout=log, stderr=subprocess.STDOUT)
        for _ in range(120):
            if docker_ok(client, env):
                break
            if process.poll() is not None:
                pytest.fail(f"dockerd exited {process.returncode}; see {folder}/dockerd.log")
            time.sleep(0.5)
        else:
            pytest.fail(f"dockerd did not answer in 60 s; see {folder}/dockerd.log")
    try:
        yield client, env, True
    finally:
        if process:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="session")
def base_image(docker, tools):
    """The base to build on: the Dockerfile's pinned digest where a registry answers, else
    an image made from Debian bookworm (python3 3.11) and tagged as the base's tag."""
    client, env, private = docker
    pinned = next(line.split("=", 1)[1] for line in
                  (ROOT / "images" / "cpu" / "Dockerfile").read_text().splitlines()
                  if line.startswith("ARG BASE_IMAGE="))
    if not private and subprocess.run([client, "pull", pinned], env=env, capture_output=True,
                                      timeout=600).returncode == 0:
        return pinned
    exists = subprocess.run([client, "image", "inspect", BASE], env=env, capture_output=True)
    if exists.returncode == 0:
        return BASE
    rootfs = tools.cache / "debian-py-bookworm.tar"
    if not rootfs.exists():
        mmdebstrap = tools.tool("mmdebstrap")
        sources = pathlib.Path("/etc/apt/sources.list.d/debian.sources")
        mirror = next((line.split()[1] for line in sources.read_text().splitlines()
                       if line.startswith("URIs:")), "http://deb.debian.org/debian")
        partial = rootfs.with_suffix(".partial.tar")
        tools.run([mmdebstrap, "--variant=minbase",
                   "--include=python3,python3-pip,python3-venv,ca-certificates", "bookworm",
                   partial, mirror], timeout=900)
        partial.rename(rootfs)
    tools.run([client, "import", rootfs, DEBIAN_BASE], env=env, timeout=300)
    tools.run([client, "tag", DEBIAN_BASE, BASE], env=env)
    return BASE


@pytest.fixture(scope="session")
def cpu_image(docker, base_image, tools):
    client, env, _ = docker
    ca = "/etc/ssl/certs/ca-certificates.crt"
    env = {**env, "DOCKER": client, **({"EXTRA_CA_BUNDLE": ca} if os.path.exists(ca) else {})}
    result = tools.run(["bash", ROOT / "scripts" / "build-image.sh", "cpu", "--network", "host",
                        "--build-arg", f"BASE_IMAGE={base_image}"], env=env, timeout=1500)
    tag = result.stdout.strip().splitlines()[-1]
    assert tag == IMAGE, f"scripts/build-image.sh built {tag!r}, expected {IMAGE!r}"
    subprocess.run([client, "image", "prune", "--force"], env=env, capture_output=True)
    return tag


def docker_run(docker, tools, *args):
    client, env, _ = docker
    return tools.run([client, "run", "--rm", "--network", "none", *args], env=env,
                     timeout=300).stdout


def test_cpu_image_is_configured_for_kfp(cpu_image, docker, tools):
    client, env, _ = docker
    (info,) = json.loads(tools.run([client, "image", "inspect", cpu_image], env=env).stdout)
    config = info["Config"]
    assert not config.get("Entrypoint"), "KFP supplies the command: no ENTRYPOINT"
    assert config["User"] == "1000:1000"
    assert config["WorkingDir"] == "/home/tfkfp"
    assert "PYTHONUNBUFFERED=1" in config["Env"]
    assert config["Labels"]["org.opencontainers.image.version"] == __version__


def test_cpu_image_runs_tfkfp_as_non_root_without_network(cpu_image, docker, tools):
    out = docker_run(docker, tools, cpu_image, "sh", "-c",
                     "id -u; tfkfp --version; python -m pip check; ls -ld /gcs /minio /s3")
    uid, version, check, *dirs = out.strip().splitlines()
    assert uid == "1000"
    assert version == f"tfkfp {__version__}"
    assert "No broken requirements" in check
    assert all(" tfkfp tfkfp " in d for d in dirs), dirs  # KFP stages artifacts there


def test_cpu_image_keeps_the_local_clusters_servers_on_loopback(cpu_image, docker, tools):
    """The shim built into the image turns a bind to every interface into one to 127.0.0.1,
    as train's local launcher preloads it (TFKFP_BIND_LOOPBACK_LIBRARY)."""
    bind = ("import socket; s = socket.socket(); s.bind(('0.0.0.0', 0)); "
            "print(s.getsockname()[0])")
    out = docker_run(docker, tools, cpu_image, "sh", "-c",
                     f'LD_PRELOAD="$TFKFP_BIND_LOOPBACK_LIBRARY" python -c "{bind}"; '
                     f'python -c "{bind}"')
    assert out.split() == ["127.0.0.1", "0.0.0.0"], out


def test_cpu_image_runs_the_manifests_image_check(cpu_image, docker, tools):
    """The Job of manifests/base, with its user, read-only root and /tmp volume."""
    job = yaml.safe_load((ROOT / "manifests" / "base" / "image-check-job.yaml").read_text())
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    user = f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    env = [f"--env={e['name']}={e['value']}" for e in container.get("env", [])]
    out = docker_run(docker, tools, "--read-only", "--tmpfs", "/tmp", "--user", user,
                     "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *env,
                     cpu_image, *container["command"])
    assert f"{IMAGE} tensorflow 2.21" in out, out


def test_training_pipeline_runs_inside_the_image_with_the_docker_runner(
        cpu_image, docker, tmp_path, monkeypatch):
    """Every component of `training` runs in the CPU image, as on a cluster, with no network:
    shard -> merge -> train -> freeze_quantize -> export_tflite -> batch_predict."""
    import numpy as np
    from kfp import local

    from conftest import write_csv
    from tfkfp.pipelines import registry

    _, env, _ = docker
    monkeypatch.setenv("DOCKER_HOST", env.get("DOCKER_HOST", ""))
    if not os.environ["DOCKER_HOST"]:
        monkeypatch.delenv("DOCKER_HOST")
    # DockerRunner mounts the pipeline root at the same path; the image's user (uid 1000)
    # writes there, and the input data must be inside it.
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    root.chmod(0o777)
    rng = np.random.default_rng(0)
    rows = [[i, *np.round(xy, 4), "up" if xy.sum() > 0 else "down"]
            for i, xy in enumerate(rng.normal(size=(400, 2)))]
    write_csv(root / "data" / "part0.csv", ["id", "x", "y", "side"], rows)
    local.init(runner=local.DockerRunner(network_mode="none"), pipeline_root=str(root),
               raise_on_error=True)
    task = registry.load("training")(
        input_uri=str(root / "data"), label="side", epochs=3, hidden_units="16",
        learning_rate=0.01, quantization="dynamic", max_accuracy_drop=0.1, min_agreement=0.8)
    outputs = task.outputs
    assert outputs["model"].metadata["eval_accuracy"] > 0.8
    assert (pathlib.Path(outputs["tflite"].path) / "model.tflite").exists()
    predictions = outputs["predictions"].metadata
    assert predictions["inputs"] == predictions["predictions"] > 0
