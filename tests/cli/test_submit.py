"""`tfkfp submit` against a stand-in for the Kubeflow Pipelines REST API (v2beta1): the
requests kfp.Client really sends are recorded and checked."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from threaded_server import send_json

from tfkfp.cli import submit
from tfkfp.cli.main import main
from tfkfp.components._image import GPU_IMAGE

API = "/apis/v2beta1"


class FakeKfp(BaseHTTPRequestHandler):
    """Healthz, experiments (none yet, so one is created) and runs; records every POST."""

    posted = []  # (path, body) of each POST, in order
    authorizations = []  # the Authorization header of each request
    reject_runs = False
    after_first_request = None  # called once, after the first request was recorded

    def do_GET(self):  # BaseHTTPRequestHandler's name
        self._record_authorization()
        if self.path.startswith(f"{API}/healthz"):
            return self._answer({"multi_user": False})
        if self.path.startswith(f"{API}/experiments"):
            return self._answer({})  # no experiment of that name yet
        self._answer({"error": f"no route {self.path}"}, 404)

    def do_POST(self):
        self._record_authorization()
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        self.posted.append((self.path, body))
        if self.path == f"{API}/experiments":
            return self._answer({"experiment_id": "exp-1", **body})
        if self.path == f"{API}/runs":
            if self.reject_runs:
                return self._answer({"error": "bad spec", "code": 3}, 400)
            return self._answer({"run_id": "run-1", "state": "PENDING", **body})
        self._answer({"error": f"no route {self.path}"}, 404)

    def _record_authorization(self):
        self.authorizations.append(self.headers.get("Authorization"))
        hook, FakeKfp.after_first_request = FakeKfp.after_first_request, None
        if hook:
            hook()

    def _answer(self, body, status=200):
        send_json(self, status, body)

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture
def kfp_server(monkeypatch, tmp_path):
    FakeKfp.posted = []
    FakeKfp.authorizations = []
    FakeKfp.reject_runs = False
    FakeKfp.after_first_request = None
    for name in (submit.TOKEN_ENV, submit.TOKEN_PATH_ENV):
        monkeypatch.delenv(name, raising=False)
    # The machine's own Kubeflow token mount, if any, must not leak into a test.
    monkeypatch.setattr(submit, "DEFAULT_TOKEN_PATH", str(tmp_path / "no-mount" / "token"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeKfp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", FakeKfp
    server.shutdown()


def _run_request(fake):
    (body,) = [body for path, body in fake.posted if path == f"{API}/runs"]
    return body


def test_submit_starts_a_run_with_the_parameters_service_account_and_gpu(kfp_server, capsys):
    host, fake = kfp_server
    assert main(["submit", "training", "--host", host, "--set", "input_uri=gs://b/data.csv",
                 "--set", "label=label", "--set", "epochs=3", "--experiment", "nightly",
                 "--service-account", "tfkfp-runner", "--gpus", "1"]) == 0
    assert "started run run-1 of 'training'" in capsys.readouterr().out
    experiment = [body for path, body in fake.posted if path == f"{API}/experiments"]
    assert experiment[0]["display_name"] == "nightly"
    run = _run_request(fake)
    assert run["experiment_id"] == "exp-1"
    assert run["service_account"] == "tfkfp-runner"
    assert run["runtime_config"]["parameters"] == {
        "input_uri": "gs://b/data.csv", "label": "label", "epochs": 3}
    train = run["pipeline_spec"]["deploymentSpec"]["executors"]["exec-train"]["container"]
    assert train["image"] == GPU_IMAGE
    assert train["resources"]["accelerator"]["resourceCount"] == "1"


def test_submit_for_a_multi_user_kubeflow_with_its_own_image_and_no_cache(kfp_server):
    host, fake = kfp_server
    mine = "registry.example.com/ml/tfkfp:7"
    assert main(["submit", "edge_export", "--host", host, "--set", "model_uri=gs://b/m",
                 "--set", "dataset_uri=gs://b/d", "--namespace", "team-a", "--token", "s3cr3t",
                 "--image", mine, "--no-cache"]) == 0
    assert set(fake.authorizations) == {"Bearer s3cr3t"}
    experiment = [body for path, body in fake.posted if path == f"{API}/experiments"]
    assert experiment[0]["namespace"] == "team-a"
    run = _run_request(fake)
    executors = run["pipeline_spec"]["deploymentSpec"]["executors"]
    assert {e["container"]["image"] for e in executors.values() if "container" in e} == {mine}
    tasks = run["pipeline_spec"]["root"]["dag"]["tasks"]
    assert all(not t.get("cachingOptions", {}).get("enableCache") for t in tasks.values())


def test_a_run_the_server_rejects_is_reported_with_its_status(kfp_server, capsys):
    host, fake = kfp_server
    fake.reject_runs = True
    assert main(["submit", "edge_export", "--host", host, "--set", "model_uri=gs://b/m",
                 "--set", "dataset_uri=gs://b/d"]) == 1
    assert f"could not start 'edge_export' on {host}: the server answered 400" in (
        capsys.readouterr().err)


EDGE_EXPORT = ["submit", "edge_export", "--set", "model_uri=gs://b/m", "--set",
               "dataset_uri=gs://b/d"]


def test_the_token_comes_from_the_environment_rather_than_the_command_line(kfp_server,
                                                                           monkeypatch):
    host, fake = kfp_server
    monkeypatch.setenv(submit.TOKEN_ENV, "from-env")
    assert main([*EDGE_EXPORT, "--host", host]) == 0
    assert set(fake.authorizations) == {"Bearer from-env"}


def test_a_token_on_the_command_line_wins_over_the_environment(kfp_server, monkeypatch):
    host, fake = kfp_server
    monkeypatch.setenv(submit.TOKEN_ENV, "from-env")
    assert main([*EDGE_EXPORT, "--host", host, "--token", "from-argv"]) == 0
    assert set(fake.authorizations) == {"Bearer from-argv"}


def test_a_token_file_is_read_again_before_each_request(kfp_server, monkeypatch, tmp_path):
    """As the kubelet rotates a projected service-account token, a later request sends the
    new one; the file wins over $TFKFP_KFP_TOKEN."""
    host, fake = kfp_server
    monkeypatch.setenv(submit.TOKEN_ENV, "from-env")
    token = tmp_path / "token"
    token.write_text("first\n")
    fake.after_first_request = lambda: token.write_text("rotated\n")
    assert main([*EDGE_EXPORT, "--host", host, "--token-file", str(token)]) == 0
    assert fake.authorizations[0] == "Bearer first"
    assert set(fake.authorizations[1:]) == {"Bearer rotated"}


def test_kfp_clients_token_path_variable_and_default_mount_are_used(kfp_server, monkeypatch,
                                                                     tmp_path):
    host, fake = kfp_server
    mounted = tmp_path / "no-mount" / "token"
    mounted.parent.mkdir()
    mounted.write_text("mounted")
    assert main([*EDGE_EXPORT, "--host", host]) == 0
    assert set(fake.authorizations) == {"Bearer mounted"}

    fake.authorizations.clear()
    named = tmp_path / "named"
    named.write_text("named")
    monkeypatch.setenv(submit.TOKEN_PATH_ENV, str(named))
    assert main([*EDGE_EXPORT, "--host", host]) == 0
    assert set(fake.authorizations) == {"Bearer named"}


def test_without_any_token_no_authorization_is_sent(kfp_server):
    host, fake = kfp_server
    assert main([*EDGE_EXPORT, "--host", host]) == 0
    assert set(fake.authorizations) == {None}


@pytest.mark.parametrize("content", [None, " \n"], ids=["missing", "empty"])
def test_a_token_file_that_cannot_be_used_is_refused_before_anything_is_sent(
        kfp_server, capsys, tmp_path, content):
    host, fake = kfp_server
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    assert main([*EDGE_EXPORT, "--host", host, "--token-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"KFP API token file {str(path)!r} (--token-file)" in err, err
    assert not fake.authorizations


def test_token_and_token_file_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*EDGE_EXPORT, "--host", "http://x", "--token", "t", "--token-file", "f"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_endpoint_comes_from_kf_pipelines_endpoint_as_kfp_client_reads_it(
        kfp_server, monkeypatch, capsys):
    host, fake = kfp_server
    monkeypatch.setenv(submit.ENDPOINT_ENV, host)
    assert main(EDGE_EXPORT) == 0
    assert f"started run run-1 of 'edge_export' on {host}" in capsys.readouterr().out
    assert _run_request(fake)


@pytest.mark.parametrize("option", ["--endpoint", "--host"])
def test_endpoint_as_kfps_cli_spells_it_and_host_both_win_over_the_variable(
        option, kfp_server, monkeypatch):
    host, fake = kfp_server
    monkeypatch.setenv(submit.ENDPOINT_ENV, "http://127.0.0.1:9")  # nothing listens there
    assert main([*EDGE_EXPORT, option, host]) == 0
    assert _run_request(fake)


def test_without_an_endpoint_submit_is_a_usage_error_naming_both_ways(monkeypatch, capsys):
    monkeypatch.delenv(submit.ENDPOINT_ENV, raising=False)
    assert main(EDGE_EXPORT) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tfkfp submit: error: no KFP API endpoint: pass --endpoint URL or set "
        "$KF_PIPELINES_ENDPOINT"]
