"""Deterministic input errors are refused before a run, naming the value and the fix, without
importing TensorFlow where the answer does not need it; and `tfkfp run`'s help lists the
pipelines and a pipeline's parameters."""

import socket
import subprocess
import sys

import pytest

from tfkfp.cli.main import main
from tfkfp.pipelines import registry

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
# The command, then what it imported of the heavy runtime, on stderr's last line.
WATCHED = ("import sys\n"
           "from tfkfp.cli.main import main\n"
           "code = main(sys.argv[1:])\n"
           "heavy = ('tensorflow', 'numpy', 'keras', 'tf_keras')\n"
           "print('imported:', sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
           "sys.exit(code)\n")


@pytest.fixture
def nothing_starts(monkeypatch):
    """The tasks a command started (run) or the runs it submitted: none, if refused."""
    from tfkfp.cli import local_run, submit

    started = []
    monkeypatch.setattr(local_run, "run_pipeline", lambda *a, **k: started.append(a))
    monkeypatch.setattr(submit, "submit", lambda *a, **k: started.append(a) or "run-1")
    return started


@pytest.fixture
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    return tmp_path / "no-kubeconfig"


def error_of(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("uri", ["nope.csv", "file://{tmp}/nope.csv", "{tmp}/*.jsonl"])
def test_a_local_input_that_does_not_exist_is_refused_before_any_task(
        uri, tmp_path, capsys, nothing_starts):
    """It used to be retried three times with backoff by fingerprint_input's retry policy
    (pipelines/fan_out.py), 88 s and four FAILED lines, before the run failed."""
    uri = uri.format(tmp=tmp_path)
    assert main(["run", "training", "--pipeline-root", str(tmp_path / "root"), "--set",
                 f"input_uri={uri}", "--set", "label=label"]) == 1
    assert error_of(capsys).startswith(
        f"tfkfp run: error: pipeline 'training': input_uri {uri!r}: no such file or folder "
        "on this machine (looked for ")
    assert not nothing_starts and not (tmp_path / "root").exists()


@pytest.mark.parametrize("pipeline, parameters, refused", [
    ("batch_prediction", ["model_uri=gs://b/m", "input_uri=new.csv"], "input_uri 'new.csv'"),
    ("serving", ["model_uri=model", "dataset_uri=gs://b/d", "target=existing",
                 'deploy_options={"url": "http://127.0.0.1:9"}'], "model_uri 'model'"),
    ("edge_export", ["model_uri=gs://b/m", "dataset_uri=data"], "dataset_uri 'data'"),
])
def test_every_pipeline_refuses_a_missing_local_input(pipeline, parameters, refused,
                                                      tmp_path, monkeypatch, capsys,
                                                      nothing_starts):
    monkeypatch.chdir(tmp_path)
    assert main(["run", pipeline, *[a for p in parameters for a in ("--set", p)]]) == 1
    assert f"{refused}: no such file or folder on this machine" in error_of(capsys)
    assert not nothing_starts


def test_existing_local_inputs_and_remote_uris_go_through(tmp_path, nothing_starts,
                                                          monkeypatch):
    (tmp_path / "a.csv").write_text("x,label\n1,0\n")
    monkeypatch.chdir(tmp_path)
    for uri in ("a.csv", "*.csv", f"file://{tmp_path}/a.csv", str(tmp_path),
                "gs://bucket/nothing-checked.csv"):
        registry.parse_parameters("training", [f"input_uri={uri}", "label=label"],
                                  runs_on="local")


@pytest.mark.parametrize("pipeline, setting", [
    ("training", ["deploy=kserve"]), ("serving", ["target=kserve"]),
    ("training", ["launcher=tfjob", 'launcher_options={"job_dir": "gs://b/jobs"}']),
])
def test_kubernetes_steps_without_a_cluster_configuration_are_refused_before_training(
        pipeline, setting, no_cluster, tmp_path, capsys, nothing_starts):
    data = (["input_uri=gs://b/data.csv", "label=label"] if pipeline == "training"
            else ["model_uri=gs://b/m", "dataset_uri=gs://b/d"])
    sets = [a for p in data + setting for a in ("--set", p)]
    assert main(["run", pipeline, *sets]) == 1
    name, _, value = setting[0].partition("=")
    assert error_of(capsys) == (
        f"tfkfp run: error: pipeline {pipeline!r}: {name} {value!r} talks to a Kubernetes "
        f"cluster, but this machine has no cluster configuration (kubeconfig {no_cluster}: "
        "Invalid kube-config file. No configuration found.): point KUBECONFIG at the "
        "cluster's kubeconfig (e.g. `kind export kubeconfig` or `gcloud container clusters "
        "get-credentials`), or run the pipeline on the cluster with `tfkfp submit`")
    assert not nothing_starts
    # submit: the steps' pods have the cluster's in-cluster configuration
    assert main(["submit", pipeline, "--host", "http://127.0.0.1:9", *sets]) == 0
    assert len(nothing_starts) == 1


def test_a_kubeconfig_or_a_pod_s_service_account_is_enough(no_cluster, monkeypatch):
    sets = ["input_uri=gs://b/data.csv", "label=label", "deploy=kserve"]
    no_cluster.write_text(KUBECONFIG)
    registry.parse_parameters("training", sets, runs_on="local")
    no_cluster.unlink()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    registry.parse_parameters("training", sets, runs_on="local")


@pytest.mark.parametrize("parameter", ["input_uri=data.csv", "checkpoint_dir=/tmp/ckpt",
                                       "warm_start_model_uri=runs/model",
                                       "data_root=/srv/shards"])
def test_submit_refuses_a_local_path_no_pod_can_read(parameter, tmp_path, capsys,
                                                     nothing_starts):
    name, _, path = parameter.partition("=")
    sets = {"input_uri": "gs://b/data.csv", "label": "label", name: path}
    assert main(["submit", "training", "--host", "http://127.0.0.1:9",
                 *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]]) == 1
    assert error_of(capsys).startswith(
        f"tfkfp submit: error: pipeline 'training': {name} {path!r} is a path on this "
        "machine, which the run's pods cannot reach: upload it and pass its gs:// or s3:// "
        "URI (e.g. gcloud storage cp, aws s3 cp), or, if every step's pod mounts that folder "
        "at the same path, say so with --mounted ")
    assert not nothing_starts


@pytest.mark.parametrize("value", ["auto", "inside", "s3://b/shards", "gs://b/shards"])
def test_submit_takes_data_root_words_and_store_uris(value, nothing_starts):
    sets = {"input_uri": "gs://b/data.csv", "label": "label", "data_root": value}
    assert main(["submit", "training", "--host", "http://127.0.0.1:9",
                 *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]]) == 0
    assert len(nothing_starts) == 1


def test_submit_takes_a_path_under_a_mounted_folder(tmp_path, capsys, nothing_starts):
    sets = ["--set", "input_uri=/mnt/data/in.csv", "--set", "label=label"]
    assert main(["submit", "training", "--host", "http://127.0.0.1:9", "--mounted",
                 "/mnt/data", *sets]) == 0
    assert len(nothing_starts) == 1
    assert main(["submit", "training", "--host", "http://127.0.0.1:9", "--mounted",
                 "/mnt/other", *sets]) == 1
    assert "input_uri '/mnt/data/in.csv' is a path on this machine" in error_of(capsys)


def tfkfp_watched(*args: str) -> tuple:
    """The command's exit status, its error line, and the heavy modules it imported."""
    result = subprocess.run([sys.executable, "-c", WATCHED, *args], capture_output=True,
                            text=True, timeout=300)
    lines = result.stderr.strip().splitlines()
    return result.returncode, lines[-2] if len(lines) > 1 else "", lines[-1]


@pytest.mark.parametrize("setting, message", [
    ("strategy=mirored", "strategy 'mirored' is not known; expected one of default"),
    ("model_name=resnet", "model_name"),
    ("precision=float8", "precision"),
    ("launcher_options={\"gpus\": 1}", "launcher_options ['gpus'] are for the cluster "
                                       "launchers"),
])
def test_a_typo_in_train_settings_is_refused_without_importing_tensorflow(setting, message):
    code, error, imported = tfkfp_watched("run", "training", "--set", "input_uri=gs://b/d.csv",
                                          "--set", "label=label", "--set", setting)
    assert code == 1 and imported == "imported: []"
    assert error.startswith("tfkfp run: error: pipeline 'training': ") and message in error


def test_loadtest_says_it_cannot_connect_before_importing_tensorflow(tmp_path):
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        code, error, imported = tfkfp_watched("loadtest", url, "--dataset", str(tmp_path))
    assert code == 1 and imported == "imported: []"
    assert error.startswith(f"tfkfp loadtest: error: {url}: cannot connect ("), error


def test_run_needs_no_local_flag_and_still_accepts_it(tmp_path, nothing_starts, monkeypatch):
    from tfkfp.cli import local_run

    monkeypatch.setattr(local_run, "summary_lines", lambda run: [])
    data = tmp_path / "d.csv"
    data.write_text("x,label\n1,0\n")
    sets = ["--set", f"input_uri={data}", "--set", "label=label"]
    assert main(["run", "training", *sets]) == 0
    assert main(["run", "training", "--local", *sets]) == 0
    assert len(nothing_starts) == 2


def test_run_help_lists_the_pipelines(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert ("batch_prediction, edge_export, serving, streaming_prediction, training, tuning"
            in " ".join(out.split()))
    assert "parameters (--set NAME=VALUE):" not in out


@pytest.mark.parametrize("command", [["run"], ["submit", "--host", "URL"]])
def test_a_pipelines_help_lists_its_parameters_with_defaults_and_meaning(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command[0], "training", *command[1:], "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert "parameters (--set NAME=VALUE):" in out
    assert ("  input_uri (String, required)\n      File, folder, pattern or gs://, s3:// or "
            "minio:// URI of the labelled input data.") in out
    assert "  epochs (Integer, default 5)\n      Training epochs." in out
    assert '  keys (List, default [])\n' in out and '  strategy (String, default "default")' \
        in out


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_scheme_no_step_reads_is_refused_naming_the_ones_that_work(command, capsys,
                                                                    nothing_starts):
    host = ["--host", "http://127.0.0.1:9"] if command == "submit" else []
    assert main([command, "training", *host, "--set", "input_uri=hdfs://nn/data.csv",
                 "--set", "label=label"]) == 1
    assert ("input_uri 'hdfs://nn/data.csv' has a scheme the suite does not read or write; "
            "use a local path or one of gs://..., s3://..., minio://..., file://...") in (
        error_of(capsys))
    assert not nothing_starts


def test_an_s3_input_is_looked_for_in_the_store_before_the_run(s3, capsys, nothing_starts):
    """It used to run for 142 s and end in TensorFlow's UnimplementedError."""
    from tfkfp.components.common.platform import uris

    missing = uris.join(s3, "nothing-here.csv")
    assert main(["run", "training", "--set", f"input_uri={missing}", "--set",
                 "label=label"]) == 1
    assert error_of(capsys).endswith(f"input_uri {missing!r}: no such object or prefix in "
                                     "the store")
    uris.write_text_atomic(uris.join(s3, "data.csv"), "x,label\n1,0\n")
    registry.parse_parameters("training", [f"input_uri={uris.join(s3, '*.csv')}",
                                           "label=label"], runs_on="local")
    assert not nothing_starts


def test_wrong_store_credentials_are_named_before_the_run(s3, monkeypatch, capsys,
                                                          nothing_starts):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    assert main(["run", "training", "--set", f"input_uri={s3}/data.csv", "--set",
                 "label=label"]) == 1
    assert "check AWS_ENDPOINT_URL and the credentials" in error_of(capsys)
    assert not nothing_starts
