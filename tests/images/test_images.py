"""The images: one image reference (components/_image.py) across the Dockerfiles, the
manifests and the compiled pipelines; Dockerfiles that follow the rules and pass hadolint; a
constraints file that pins every dependency within pyproject's ranges."""

import os
import pathlib
import re
import subprocess

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tfkfp.components._image import GPU_IMAGE, IMAGE, IMAGE_NAME, __version__

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((ROOT / "images").glob("*/Dockerfile"))
WORKER = ROOT / "images" / "beam-worker" / "Dockerfile"  # Beam's custom-container rules
SUITE_DOCKERFILES = [p for p in DOCKERFILES if p != WORKER]  # the images KFP steps run in
CONSTRAINTS = ROOT / "images" / "constraints.txt"
DIGEST = r"@sha256:[0-9a-f]{64}"


def instructions(dockerfile):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(
        line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")))
    return [(m.group(1).upper(), m.group(2).strip())
            for m in re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", text, re.M)]


def pins(section: str = ""):
    """NAME -> VERSION of the constraints (only under the heading containing ``section``)."""
    result, inside = {}, not section
    for line in CONSTRAINTS.read_text().splitlines():
        if line.startswith("# ") and section:
            inside = section in line
        line = line.split("#")[0].strip()
        if line and inside:
            name, sep, version = line.partition("==")
            assert sep and version, f"images/constraints.txt: {line!r} is not NAME==VERSION"
            result[canonicalize_name(name)] = version
    return result


def hashed(path):
    """NAME -> (VERSION, [sha256, ...]) of a --require-hashes requirements file."""
    text = re.sub(r"\\\n", " ", path.read_text())
    result = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            spec, *options = line.split()
            name, _, version = spec.partition("==")
            result[canonicalize_name(name)] = (version, [o.removeprefix("--hash=sha256:")
                                                         for o in options])
    return result


def base_image(dockerfile):
    """The FROM of the final stage, with the ARG BASE_IMAGE default put in."""
    steps = instructions(dockerfile)
    default = next(a.split("=", 1)[1] for i, a in steps
                   if i == "ARG" and a.startswith("BASE_IMAGE="))
    final = [a for i, a in steps if i == "FROM"][-1].split()[0]
    return final.replace("${BASE_IMAGE}", default)


def test_there_are_the_cpu_gpu_and_beam_worker_dockerfiles():
    assert [p.parent.name for p in DOCKERFILES] == ["beam-worker", "cpu", "gpu"]


@pytest.mark.parametrize("dockerfile", SUITE_DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_version_is_the_suite_version(dockerfile):
    args = [a for i, a in instructions(dockerfile) if i == "ARG" and a.startswith("TFKFP_VERSION")]
    assert args == [f"TFKFP_VERSION={__version__}"], (
        f"{dockerfile.relative_to(ROOT)}: ARG {args}, but components/_image.py __version__ is "
        f"{__version__!r}")
    assert re.search(r'org\.opencontainers\.image\.version="\$\{TFKFP_VERSION\}"',
                     dockerfile.read_text())
    # the build itself fails when the checkout's version differs from the build argument
    assert "assert v == '${TFKFP_VERSION}'" in dockerfile.read_text()


@pytest.mark.parametrize("dockerfile", SUITE_DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_follows_the_image_rules(dockerfile):
    steps = instructions(dockerfile)
    kinds = [i for i, _ in steps]
    env = " ".join(a for i, a in steps if i == "ENV")
    runs = " ".join(a for i, a in steps if i == "RUN")
    where = dockerfile.relative_to(ROOT)
    assert "ENTRYPOINT" not in kinds and "CMD" not in kinds, f"{where}: KFP supplies the command"
    assert "PYTHONUNBUFFERED=1" in env and "VIRTUAL_ENV=/opt/venv" in env
    assert "PATH=/opt/venv/bin:$PATH" in env
    assert "-m venv /opt/venv" in runs, f"{where}: install into the virtual environment"
    assert "-c /tmp/build/constraints.txt" in runs, f"{where}: install with the constraints"
    assert "--require-hashes --no-deps -r /tmp/build/requirements.txt" in runs, (
        f"{where}: dependencies are installed hash-checked, exactly the pinned set")
    assert any(i == "COPY" and "images/constraints.txt" in a for i, a in steps)
    assert any(i == "COPY" and "images/requirements.txt" in a for i, a in steps)
    assert re.search(DIGEST + "$", base_image(dockerfile)), f"{where}: base not pinned by digest"
    assert "TFKFP_BIND_LOOPBACK_LIBRARY=/opt/tfkfp/lib/bind_loopback.so" in env
    assert "bind_loopback.so" in runs + " ".join(a for i, a in steps if i == "COPY"), (
        f"{where}: the loopback shim is built into the image")
    assert any(i == "COPY" and a.startswith("components ") for i, a in steps), (
        f"{where}: the image is built from this checkout")
    users = [a for i, a in steps if i == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root"), f"{where}: runs as root"
    assert re.fullmatch(r"\d+(:\d+)?", users[-1]), f"{where}: USER must be numeric"
    assert kinds.index("USER") > max(k for k, i in enumerate(kinds) if i == "RUN"), (
        f"{where}: the last RUN must come before USER")
    assert "WORKDIR" in kinds


def test_beam_worker_image_follows_beams_custom_container_rules():
    """Beam's SDK image of CI's Python and the suite's Beam as its base, Beam's boot as its
    ENTRYPOINT, the suite installed with its beam and local extras under the constraints,
    and the build checking the suite, Python and Beam inside against the tag's versions
    (common/beam/dataflow_images.py reads them from the tag)."""
    from tfkfp.components.common.beam.dataflow_images import image_versions

    steps = instructions(WORKER)
    args = dict(a.partition("=")[::2] for i, a in steps if i == "ARG")
    python, beam = args["PYTHON_VERSION"], args["BEAM_VERSION"]
    base = base_image(WORKER)
    assert re.fullmatch(rf"apache/beam_python{re.escape(python)}_sdk:{re.escape(beam)}"
                        rf"({DIGEST})?", base), base
    assert image_versions(base) == {"python": python, "beam": beam}
    assert base_image(ROOT / "images" / "cpu" / "Dockerfile").startswith(f"python:{python}-")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    wanted = next(Requirement(r) for r in extras["beam"] if r.startswith("apache-beam"))
    assert wanted.specifier.contains(beam), f"BEAM_VERSION {beam}, pyproject wants {wanted}"
    assert pins().get("apache-beam", beam) == beam, "images/constraints.txt pins another Beam"
    assert args["TFKFP_VERSION"] == "", "TFKFP_VERSION is the tag's: no default to go stale"
    text = WORKER.read_text()
    documented = re.findall(r"tfkfp-beam-worker:\$version-(py[\d.]+-beam[\d.]+)", text)
    assert documented == [f"py{python}-beam{beam}"], documented
    assert steps[-1] == ("ENTRYPOINT", '["/opt/apache/beam/boot"]')
    assert "USER" not in [i for i, _ in steps], "Beam's boot installs into the base's Python"
    runs = " ".join(a for i, a in steps if i == "RUN")
    assert '-c /tmp/build/constraints.txt "/src[beam,local]"' in runs and "pip check" in runs
    assert "assert v == '${TFKFP_VERSION}'" in runs
    assert "== ('${PYTHON_VERSION}', '${BEAM_VERSION}')" in runs
    assert any(i == "COPY" and a.startswith("components ") for i, a in steps)


def test_gpu_image_has_a_cuda_base_matching_tensorflow_cuda_extras():
    gpu = ROOT / "images" / "gpu" / "Dockerfile"
    base = base_image(gpu)
    match = re.fullmatch(r"nvidia/cuda:(\d+)\.(\d+)\.\d+-[\w.-]+" + DIGEST, base)
    assert match, f"images/gpu/Dockerfile: FROM {base}: expected an nvidia/cuda base"
    runtime = pins()["nvidia-cuda-runtime-cu12"]
    assert runtime.split(".")[:2] == [match.group(1), match.group(2)], (
        f"CUDA base {base} but constraints pin nvidia-cuda-runtime-cu12=={runtime}")
    assert "-r /tmp/build/requirements-gpu.txt" in gpu.read_text()


def test_cpu_image_uses_the_python_of_ci():
    base = base_image(ROOT / "images" / "cpu" / "Dockerfile")
    assert base.startswith("python:3.11-"), base


@pytest.mark.parametrize("name, section", [("requirements.txt", "runtime"),
                                           ("requirements-gpu.txt", "GPU image")])
def test_the_hash_checked_requirements_are_exactly_the_constraints(name, section):
    """Every pin of that part of the constraints, at the same version, with a sha256; run
    scripts/hash-requirements.sh after changing the constraints."""
    locked = hashed(ROOT / "images" / name)
    expected = pins(section)
    assert expected, f"images/constraints.txt has no {section!r} section"
    assert {n: v for n, (v, _) in locked.items()} == expected, (
        f"images/{name} differs from the {section} pins of images/constraints.txt")
    for pinned, (_, digests) in locked.items():
        assert digests and all(re.fullmatch(r"[0-9a-f]{64}", d) for d in digests), (
            f"images/{name}: {pinned} has no sha256")


def test_constraints_pin_every_dependency_within_pyproject_ranges():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = pins()
    assert "tfkfp" not in pinned, "the constraints must not pin tfkfp itself"
    requirements = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():  # tfkfp[...]: other extras
        requirements += [r for r in map(Requirement, extra) if r.name != "tfkfp"]
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"images/constraints.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"images/constraints.txt pins {name}=={pinned[name]}, pyproject.toml wants "
            f"{requirement}")
    assert any(n.startswith("nvidia-cudnn") for n in pinned), "the GPU extras are not pinned"


def test_constraints_match_the_installed_runtime_where_ci_installs_them():
    """In a venv built with `-c images/constraints.txt` (CI), what is installed is what is
    pinned; elsewhere this only reports."""
    from importlib import metadata

    drift = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed != version:
            drift[name] = (version, installed)
    if drift and not os.environ.get("TFKFP_CONSTRAINED_ENV"):
        pytest.skip(f"this venv differs from images/constraints.txt: {sorted(drift)[:5]}...")
    assert not drift, f"pinned vs installed: {drift}"


def test_compiled_pipelines_run_the_suite_image():
    compiled = sorted((ROOT / "pipelines").glob("*.yaml"))
    assert compiled, "no compiled pipeline YAML in pipelines/"
    for path in compiled:
        spec = yaml.safe_load(path.read_text())
        executors = spec["deploymentSpec"]["executors"]
        images = {name: e["container"]["image"] for name, e in executors.items()
                  if "container" in e}  # importers run in KFP's own launcher
        assert images, f"{path.relative_to(ROOT)} has no container executor"
        bad = {name: image for name, image in images.items() if image != IMAGE}
        assert not bad, f"{path.relative_to(ROOT)}: executors not on {IMAGE}: {bad}"


def test_build_script_tags_the_image_from_image_py():
    script = (ROOT / "scripts" / "build-image.sh").read_text()
    assert "components/_image.py" in script and "TFKFP_VERSION=$version" in script
    assert f"{IMAGE_NAME}:{__version__}" == IMAGE
    assert '[[ $FLAVOR == gpu ]] && tag="$tag-gpu"' in script and f"{IMAGE}-gpu" == GPU_IMAGE


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_passes(dockerfile, tools):
    hadolint = tools.tool("hadolint")
    tools.run([hadolint, "--failure-threshold", "info", dockerfile])


SHELL_SCRIPTS = sorted((ROOT / "scripts").rglob("*.sh")) + [ROOT / ".ci" / "install-cluster-tools"]


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_scripts_pass_shellcheck(script, tools):
    tools.run([tools.tool("shellcheck"), "--severity", "info", script])


def test_hadolint_rejects_a_bad_dockerfile(tools, tmp_path):
    """The gate bites: an unpinned base, `latest`, and a root ADD are reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install curl\nADD . /src\n")
    result = subprocess.run([tools.tool("hadolint"), bad], capture_output=True, text=True)
    assert result.returncode != 0 and "DL3007" in result.stdout, result.stdout
