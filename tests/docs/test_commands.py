"""Every shell command of the README and docs/ is run, or excused with its reason.

The commands of fenced ``bash``/``sh``/``shell`` blocks (and ``$``-lines of ``console``
blocks) are classified: set-up (installing, a virtual environment, the test suite), excused
(needs a cluster, a cloud project, a registry, a server or hours: listed in EXCUSED with the
reason, and checked by parsing: the CLI's own parser, the pipeline's parameters, the repo's
paths they name), expected to be refused (the page says so: EXPECTED_REFUSALS), or executed
here, each block's in its order in a fresh folder, with the placeholders of PLACEHOLDERS
standing for small local data. A page of RUN_AS_ONE runs as one block: the CI page renders
an overlay with ``kubectl kustomize`` and checks against it, the serving page writes request
bodies and sends each ``curl`` to a ``tfkfp serve`` of the demo model started once per run.
A command added to the docs is executed unless it is excused, so one that cannot run here
fails until it is listed with its reason.
"""

import pathlib
import re
from typing import Callable, Dict, List, Tuple

import pytest
from doc_commands import (
    ROOT,
    RUN_AS_ONE,
    Command,
    Materials,
    block_lines,
    blocks,
    commands_of,
    pages_as_one,
    run_child,
    shell_words,
    stage_repo_paths,
)

SET_UP = {"python3 -m venv .venv": "makes the virtual environment the next commands use",
          ". .venv/bin/activate": "activates that environment",
          "pytest": "the test suite itself",
          # and every pip command: installs, run by CI
          "python -m build --wheel": "builds the wheel the next pip command installs"}
CLUSTER = "needs a Kubernetes cluster"
KFP = "needs a Kubeflow Pipelines API server (tfkfp submit)"
GCP = "needs a Google Cloud project"
REGISTRY = "needs a container registry to push to"
SERVER = "needs a model server at the URL it names"
BENCHMARK = "runs every benchmark scenario: tens of minutes on 2 cores (tests/benchmark_scenarios)"
EXCUSED = {
    "scripts/build-image.sh cpu": "needs a Docker engine (tests/images builds the image)",
    "scripts/build-image.sh gpu": "needs a Docker engine and the CUDA base image",
    "docker tag tfkfp/tfkfp:0.1.0 REGISTRY/ml/tfkfp:0.1.0": "needs the image built first",
    "docker push REGISTRY/ml/tfkfp:0.1.0": REGISTRY,
    "tfkfp submit training --host URL --image REGISTRY/ml/tfkfp:0.1.0 --set "
    "input_uri=gs://bucket/data.csv --set label=label": KFP,
    "tfkfp submit training --host URL --image REGISTRY/ml/tfkfp:0.1.0 --set input_uri=... "
    "--set label=...": KFP,
    "tfkfp submit training --host http://localhost:8080 --set input_uri=gs://bucket/data.csv "
    "--set label=label": KFP,
    "tfkfp submit training --host http://localhost:8080 --image REGISTRY/ml/tfkfp:0.1.0 "
    "--set input_uri=gs://bucket/data.csv --set label=label": KFP,
    "tfkfp submit training --host URL --store-secret mlpipeline-minio-artifact --set "
    "input_uri=minio://mlpipeline/tables/data.csv --set label=label": KFP,
    'tfkfp submit serving --host http://localhost:8080 --set model_uri=gs://b/models/digits '
    '--set dataset_uri=gs://b/datasets/digits --set service_name=digits --set '
    'deploy_options={"namespace": "tfkfp", "mode": "standard", "cpu": "2", "memory": "4Gi"}':
        KFP,
    "python -m benchmarks": BENCHMARK,
    "python -m benchmarks --quick": BENCHMARK + ", minutes with --quick",
    "python -m benchmarks --json results.json": BENCHMARK,
    "python -m benchmarks --only training": "trains on 200k rows: minutes",
    "tfkfp run batch_prediction --local --set model_uri=tfkfp-runs/RUN/train/model --set "
    "dataset_uri=path/to/dataset --set endpoint_url=http://127.0.0.1:8080 --set "
    "endpoint_model=model --set endpoint_batch_rows=256 --set endpoint_concurrency=4": SERVER,
    "tfkfp run batch_prediction --set model_uri=gs://BUCKET/models/digits/1 --set "
    "dataset_uri=gs://BUCKET/datasets/digits --set endpoint_protocol=vertex --set "
    "endpoint_url=projects/PROJECT/locations/europe-west4/endpoints/1234567890":
        GCP + " and a Vertex AI Endpoint",
    'tfkfp run serving --local --set model_uri=runs/model --set dataset_uri=runs/dataset '
    '--set target=existing --set service_name=digits --set deploy_options={"url": '
    '"http://127.0.0.1:8080"}': SERVER,
    'tfkfp run training --local --set input_uri=path/to/your-data.csv --set label=label '
    '--set deploy=kserve --set deploy_options={"namespace": "team", "mode": "knative", '
    '"traffic_percent": 10}': CLUSTER + " with KServe",
    "export AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ACCESS_KEY_ID=KEY "
    "AWS_SECRET_ACCESS_KEY=SECRET": "the store of the next command",
    "tfkfp run training --set input_uri=s3://BUCKET/tables/*.csv --set label=label --set "
    "data_root=s3://BUCKET/tfkfp-data": "needs an S3-compatible store and its keys "
    "(tests/object_store shards and reads s3:// data against a local one)",
    "scripts/kind-up.sh": "needs Docker and kind",
    'tfkfp run batch_prediction --set model_uri=gs://bucket/models/digits --set '
    'dataset_uri=gs://bucket/datasets/digits --set beam_runner=dataflow --set '
    'beam_options={"project": "my-project", "region": "europe-west4", "temp_location": '
    '"gs://bucket/tmp", "sdk_container_image": "REGISTRY/ml/tfkfp-beam:0.1.0"}':
        GCP + " (Dataflow)",
    'tfkfp run streaming_prediction --set model_uri=gs://bucket/models/digits --set '
    'subscription=projects/my-project/subscriptions/rows-sub --set '
    'output_topic=projects/my-project/topics/predictions --set '
    'dead_letter_topic=projects/my-project/topics/dead-letters --set beam_options={"project": '
    '"my-project", "region": "europe-west4", "temp_location": "gs://bucket/tmp", '
    '"sdk_container_image": "REGISTRY/ml/tfkfp-beam:0.1.0"}':
        GCP + " (Pub/Sub and Dataflow)",
    "export PUBSUB_EMULATOR_HOST=127.0.0.1:8085": "the emulator of the command before it",
    "INPUT_URI=gs://bucket/digits.csv scripts/kind-up.sh": "needs Docker, kind and a bucket",
    "kubectl apply -k manifests/overlays/gke": CLUSTER,
    "kubectl apply --server-side -k manifests/trainer": CLUSTER,
    "tfkfp loadtest http://INGRESS_IP:80 --dataset DATASET --model tfkfp-model -H Host: "
    "tfkfp-model.tfkfp.example.com --token-file token.txt --rate 50 100 200":
        "needs an InferenceService behind its ingress",
}
EXCUSED_WORDS = {"gcloud": GCP}  # every command of these programs: the IAM set-up
# every command that starts with these words
EXCUSED_PREFIXES = {("tfkfp", "stream"): "needs Pub/Sub or its emulator "
                    "(tests/cli/test_stream.py runs tfkfp stream on one)"}
# Commands the page itself says are refused, with what the refusal says.
EXPECTED_REFUSALS = {
    "tfkfp run edge_export --local --set model_uri=mobilenet --set dataset_uri=photos-dataset":
        "the model answers the same whatever it is fed",  # weights=None: "refuses it"
}
# Commands taking minutes: the default run leaves their blocks to `pytest -m slow`.
SLOW = (("tfkfp", "run"), ("tfkfp", "demo"), ("python", "-c"))


# Placeholder in a docs command -> (what stands in for it, what that is).
PLACEHOLDERS: Dict[str, Tuple[Callable[[Materials], str], str]] = {
    "path/to/your-data.csv": (lambda m: m.your_table,
                              "a 240-row table: id, two floats, a colour, a yes/no label"),
    "YOUR_LABEL": (lambda m: "label", "that table's label column"),
    "YOUR_ID": (lambda m: "id", "that table's key column"),
    "path/to/folder/": (lambda m: m.tables_folder, "a folder of four such tables"),
    "data/*.csv": (lambda m: m.data_tables, "two such tables"),
    "tfkfp-demo/data/digits.csv": (lambda m: m.digits_csv, "the digits `tfkfp demo` writes"),
    "path/to/new-data.csv": (lambda m: m.digits_csv, "new rows for the digits model"),
    "tfkfp-runs/RUN/train/model": (lambda m: m.digits_model,
                                   "a model a run wrote: trained one epoch on the digits"),
    "gs://bucket/models/digits": (lambda m: m.digits_model, "that model"),
    "gs://bucket/datasets/digits": (lambda m: m.digits_dataset, "the digits, sharded"),
    "photos/": (lambda m: m.photos, "two class folders of 12 random 96x96 photos"),
    "REGISTRY/": (lambda m: "registry.example/", "a registry name, for compiling"),
    "http://127.0.0.1:8080": (lambda m: m.served_url,
                              "tfkfp serve of that model, started once per run"),
}


def kind_of(command: Command) -> str:
    """set-up, excused, refused (expected), or run."""
    if command.words[0] == "pip" or command.text in SET_UP:
        return "set-up"
    if (command.text in EXCUSED or command.words[0] in EXCUSED_WORDS
            or command.words[:2] in EXCUSED_PREFIXES or starts_a_server(command)):
        return "excused"
    return "refused" if command.text in EXPECTED_REFUSALS else "run"


def starts_a_server(command: Command) -> bool:
    """``tfkfp serve`` without ``--example-request`` runs until stopped: excused, and started
    once per run (Materials.served_url) for the commands that name http://127.0.0.1:8080."""
    return command.words[:2] == ("tfkfp", "serve") and "--example-request" not in command.words


def executed_blocks() -> List:
    """Each block whose commands run here, with those not already run by an earlier block
    (the README's and get-started's are the same); slow where one takes minutes."""
    seen, params = set(), []
    for name, commands in pages_as_one(blocks()):
        todo = [c for c in commands if kind_of(c) in ("run", "refused")
                and (c.text not in seen or c.page in RUN_AS_ONE)]
        seen.update(c.text for c in todo)
        if todo:
            slow = any(c.words[:2] in SLOW for c in todo)
            params.append(pytest.param(todo, id=name, marks=[pytest.mark.slow] if slow else []))
    return params


def all_commands() -> List[Command]:
    return [command for _, commands in blocks() for command in commands]


def substitute(words: Tuple[str, ...], materials: Materials) -> List[str]:
    """The words with each placeholder replaced by what stands in for it (longest first)."""
    out = []
    for word in words:
        for placeholder in sorted(PLACEHOLDERS, key=len, reverse=True):
            if placeholder in word:
                word = word.replace(placeholder, PLACEHOLDERS[placeholder][0](materials))
        out.append(word)
    return out


def run(words: List[str], capsys) -> Tuple[int, str]:
    """Exit status and output of a command: tfkfp in this process, python and kubectl in a
    child; globs expanded and ``>`` followed as a shell would."""
    words, target = shell_words(words)
    if words[0] == "tfkfp":
        from tfkfp.cli.main import main

        capsys.readouterr()  # what making the placeholders' data printed is not its output
        code = main(words[1:])
        captured = capsys.readouterr()
        code, out, err = code, captured.out, captured.err
    else:
        code, out, err = run_child(words)
    if target:
        pathlib.Path(target).write_text(out)
        return code, err
    return code, out + err


@pytest.fixture(scope="module")
def materials(tmp_path_factory):
    made = Materials(tmp_path_factory.mktemp("materials"))
    yield made
    made.close()


@pytest.mark.parametrize("commands", executed_blocks())
def test_the_commands_of_a_block_run_as_written(commands, materials, tmp_path, monkeypatch,
                                                capsys):
    """In order, in a fresh folder, placeholders replaced: each exits 0, or is refused with
    the message its page announces."""
    monkeypatch.chdir(tmp_path)
    stage_repo_paths(commands, tmp_path)
    for command in commands:
        code, output = run(substitute(command.words, materials), capsys)
        said = "\n".join(output.strip().splitlines()[-15:])
        refusal = EXPECTED_REFUSALS.get(command.text)
        if refusal:
            assert code != 0 and refusal in output, (
                f"{command.page}: {command.text!r} was to be refused with {refusal!r} (exit "
                f"{code}):\n{said}")
        else:
            assert code == 0, f"{command.page}: {command.text!r} failed (exit {code}):\n{said}"
        if command.words[0] == "curl":  # an answer, not a refusal (curl -s exits 0 on 400)
            assert '"error"' not in output, f"{command.page}: {command.text!r}:\n{said}"


def test_every_command_is_run_or_excused():
    """A command no test can run (kubectl, docker, a new program) must be excused by name."""
    unrunnable = [f"{c.page}: {c.text}" for c in all_commands()
                  if kind_of(c) in ("run", "refused")
                  and c.words[0] not in ("tfkfp", "python", "python3", "curl")
                  and c.words[:2] != ("kubectl", "kustomize")]
    assert not unrunnable, ("not runnable here: list each in EXCUSED with the reason, or "
                            f"make it a tfkfp or python command: {unrunnable}")


@pytest.mark.parametrize("command", [c for c in all_commands() if kind_of(c) == "excused"],
                         ids=lambda c: c.text[:70])
def test_an_excused_command_parses(command):
    """What can be checked without its cluster, cloud or server: a tfkfp command parses with
    the CLI's parser and its --set names and values suit the pipeline; a benchmark command
    parses with its own; the scripts and manifests it names exist."""
    words = list(command.words)
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):  # VAR=value before a command
        words = words[1:]
    if words[0] == "tfkfp":
        check_tfkfp_arguments(command.page, words)
    elif words[:3] == ["python", "-m", "benchmarks"]:
        from benchmarks.__main__ import parse_args

        parse_args(words[3:])
    for word in words:
        if word.startswith(("scripts/", "manifests/")):
            assert (ROOT / word).exists(), f"{command.page}: {command.text!r}: no {word}"


def check_tfkfp_arguments(page: str, words: List[str]) -> None:
    from tfkfp.cli import main as cli
    from tfkfp.pipelines import registry

    try:
        args = cli._parser().parse_args(words[1:])
    except SystemExit as exit_:
        pytest.fail(f"{page}: {' '.join(words)!r} does not parse (exit {exit_.code})")
    if args.command in ("run", "submit"):
        try:
            registry.parse_parameters(args.name, args.parameters)
        except registry.ParameterError as err:
            pytest.fail(f"{page}: {' '.join(words)!r}: {err}")


def test_every_entry_of_the_tables_is_in_the_docs():
    """A command or placeholder the docs no longer have is taken out of the tables."""
    texts = {c.text for c in all_commands()}
    stale = [t for t in (*SET_UP, *EXCUSED, *EXPECTED_REFUSALS) if t not in texts]
    stale += [p for p in PLACEHOLDERS if not any(p in t for t in texts)]
    assert not stale, f"in the tables but not in any docs command: {stale}"


def test_the_commands_are_found():
    """The block reader finds the README's commands and splits lines as a shell does."""
    texts = [c.text for c in all_commands() if c.page == "README.md"]
    assert "tfkfp demo" in texts and "pip install -e .[dev]" in texts
    assert len(all_commands()) > 60
    assert commands_of("for g in a b; do") == [] and commands_of("done") == []
    assert commands_of("A=1 tfkfp run x --local  # note") == [("A=1", "tfkfp", "run", "x",
                                                               "--local")]
    assert commands_of("a && b | c; d") == [("a",), ("b",), ("c",), ("d",)]
    assert block_lines("console", "$ tfkfp demo\nan output line\n") == ["tfkfp demo"]
    assert block_lines("bash", "tfkfp run x \\\n  --local\n") == ["tfkfp run x    --local"]


def test_a_placeholder_is_replaced_by_what_stands_in_for_it(tmp_path):
    words = substitute(("tfkfp", "shard", "data/*.csv", "--label", "YOUR_LABEL",
                        "--image", "REGISTRY/ml/tfkfp:0.1.0"), Materials(tmp_path))
    assert words == ["tfkfp", "shard", str(tmp_path / "data" / "*.csv"), "--label", "label",
                     "--image", "registry.example/ml/tfkfp:0.1.0"]
    assert len(list((tmp_path / "data").glob("*.csv"))) == 2
