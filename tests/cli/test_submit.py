"""`tfkfp submit` against a stand-in for the Kubeflow Pipelines REST API (v2beta1): the
requests kfp.Client really sends are recorded and checked."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tfkfp.cli.main import main
from tfkfp.components._image import GPU_IMAGE

API = "/apis/v2beta1"


class FakeKfp(BaseHTTPRequestHandler):
    """Healthz, experiments (none yet, so one is created) and runs; records every POST."""

    posted = []  # (path, body) of each POST, in order
    authorizations = []  # the Authorization header of each request
    reject_runs = False

    def do_GET(self):  # BaseHTTPRequestHandler's name
        self.authorizations.append(self.headers.get("Authorization"))
        if self.path.startswith(f"{API}/healthz"):
            return self._answer({"multi_user": False})
        if self.path.startswith(f"{API}/experiments"):
            return self._answer({})  # no experiment of that name yet
        self._answer({"error": f"no route {self.path}"}, 404)

    def do_POST(self):
        self.authorizations.append(self.headers.get("Authorization"))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        self.posted.append((self.path, body))
        if self.path == f"{API}/experiments":
            return self._answer({"experiment_id": "exp-1", **body})
        if self.path == f"{API}/runs":
            if self.reject_runs:
                return self._answer({"error": "bad spec", "code": 3}, 400)
            return self._answer({"run_id": "run-1", "state": "PENDING", **body})
        self._answer({"error": f"no route {self.path}"}, 404)

    def _answer(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture
def kfp_server():
    FakeKfp.posted = []
    FakeKfp.authorizations = []
    FakeKfp.reject_runs = False
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
