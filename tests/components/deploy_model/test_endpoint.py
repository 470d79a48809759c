"""deploy_model against a running `tfkfp serve` (target existing), the smoke test, and the
serving pipeline under the KFP local runner, through the command a user types: the gate
keeps a worse model out, a deployment is smoke-tested, and a rerun with precomputed answers
makes the running server reload them."""

import glob
import json
import os

import pytest
from serve_process import running

from tfkfp.cli.main import main
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.deploy_model.core import deploy_model
from tfkfp.components.deploy_model.errors import DeployFailed, SmokeTestFailed
from tfkfp.components.deploy_model.smoke import smoke_test

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def precomputed(demo_model, demo_dataset, tmp_path_factory):
    """batch_predict's answers for every demo row, keyed by id: what the server starts with."""
    out = str(tmp_path_factory.mktemp("precomputed") / "answers")
    batch_predict(demo_model, demo_dataset, out, keys=["id"])
    return out


@pytest.fixture(scope="module")
def server(demo_model, precomputed, tmp_path_factory):
    with running(demo_model, "--name", "digits", "--precomputed", precomputed,
                 "--precomputed-key", "id", "--precomputed-reload", "0.5",
                 tmp_path=tmp_path_factory.mktemp("serve")) as started:
        yield started


def url(server):
    return f"http://127.0.0.1:{server.port}"


def test_an_existing_endpoint_is_checked_and_smoke_tested(server, demo_model, demo_dataset):
    done = deploy_model(demo_model, "existing", "digits", {"url": url(server) + "/"})
    assert done.endpoint_url == url(server)
    result = smoke_test(done.endpoint_url, "digits", demo_model, demo_dataset, rows=16)
    assert result.rows == 16 and result.max_score_diff < 1e-3


def test_a_smoke_test_fails_naming_the_rows_answered_unlike_the_model(
        server, untrained_model, demo_dataset):
    with pytest.raises(SmokeTestFailed, match=r"answered \d+ of 16 rows unlike model.*\n  row "):
        smoke_test(url(server), "digits", untrained_model, demo_dataset, rows=16)


def test_an_endpoint_that_does_not_serve_the_model_fails_the_deployment(server, demo_model):
    with pytest.raises(DeployFailed, match=r"/v1/models/other did not report model 'other' "
                                           r"ready within 2 s: 404"):
        deploy_model(demo_model, "existing", "other", {"url": url(server),
                                                        "deadline_seconds": 2})


def test_the_gate_measures_the_model_version_an_existing_endpoint_serves(
        server, demo_model, untrained_model, demo_dataset):
    """Without serving_model_uri the gate asks the endpoint which version of the model it
    serves and measures that model through it: the demo model, not "nothing serves"."""
    from tfkfp.components.deploy_model.core import serving_model_uri
    from tfkfp.components.deploy_model.gate import gate

    serving = serving_model_uri("existing", "digits", {"url": url(server)})
    assert serving == f"{url(server)}/v1/models/digits"
    assert serving_model_uri("existing", "other", {"url": url(server)}) == ""  # not served
    through = gate(untrained_model, demo_dataset, serving)
    here = gate(untrained_model, demo_dataset, demo_model)
    assert not through.deploy and through.baseline_version == "1"  # tfkfp serve's version
    assert abs(through.baseline - here.baseline) <= 2 / through.examples  # near ties aside
    assert f"serving model ({serving}, version 1)" in through.reason()
    assert gate(demo_model, demo_dataset, serving, margin=0.01).deploy  # itself, near ties


def test_log_loss_through_an_endpoint_that_answers_its_top_class_only_is_refused(
        demo_model, untrained_model, demo_dataset, tmp_path):
    """The untrained model's top class is mostly wrong, so its answers lack the true class's
    score for most rows: log_loss cannot be measured from them."""
    from tfkfp.components.deploy_model.errors import GateInputError
    from tfkfp.components.deploy_model.gate import gate

    refused = pytest.raises(GateInputError, match=r"left it out of its answers for \d+ of "
                                                  r"\d+ rows .* serve with --top-k 10")
    with running(untrained_model, "--name", "digits", tmp_path=tmp_path) as untrained, refused:
        gate(demo_model, demo_dataset, f"{url(untrained)}/v1/models/digits", metric="log_loss")


def run_serving(tmp_path, *pairs):
    return main(["run", "serving", "--local", "--pipeline-root", str(tmp_path / "root"),
                 "--set", "target=existing", "--set", "service_name=digits", *pairs])


def metrics_of(tmp_path, step):
    found = glob.glob(str(tmp_path / "root" / "**" / step / "**" / "metrics"),
                      recursive=True)
    assert len(found) == 1, found
    return json.load(open(found[0]))


def test_the_serving_pipeline_keeps_a_worse_model_out(server, demo_model, untrained_model,
                                                      demo_dataset, tmp_path, capsys):
    code = run_serving(tmp_path, "--set", f"model_uri={untrained_model}",
                       "--set", f"dataset_uri={demo_dataset}",
                       "--set", f"serving_model_uri={demo_model}",
                       "--set", f'deploy_options={{"url": "{url(server)}"}}')
    assert code == 0
    out = capsys.readouterr().out
    assert "deploy-gate" in out and "deploy-model" not in out and "smoke-test" not in out


@pytest.mark.usefixtures("isolated")  # each task sees only its own inputs, as in a pod
def test_the_serving_pipeline_deploys_smoke_tests_and_refreshes_precomputed_answers(
        server, demo_model, demo_dataset, precomputed, tmp_path, capsys):
    before = server.tail().count("precomputed: reloaded")
    code = run_serving(tmp_path, "--set", f"model_uri={demo_model}",
                       "--set", f"dataset_uri={demo_dataset}",
                       "--set", f"serving_model_uri={demo_model}",
                       "--set", f'deploy_options={{"url": "{url(server)}"}}',
                       "--set", f"precompute_dataset_uri={demo_dataset}",
                       "--set", f"precomputed_uri={precomputed}",
                       "--set", "precomputed_key=id")
    assert code == 0
    out = capsys.readouterr().out
    for step in ("deploy-gate", "batch-predict", "publish-precomputed", "deploy-model",
                 "smoke-test"):
        assert step in out, out[-3000:]
    assert os.listdir(precomputed)  # published whole, no temporary left beside it
    assert not [n for n in os.listdir(os.path.dirname(precomputed)) if n != "answers"]
    server.wait_until(lambda: server.tail().count("precomputed: reloaded") > before,
                      "reloaded the published answers", timeout=30)
    status, body = server.v1([{"id": 5, **{f"pixel_{i}": 0 for i in range(64)}}], "digits")
    assert status == 200 and body["predictions"][0].get("precomputed") is True, body
