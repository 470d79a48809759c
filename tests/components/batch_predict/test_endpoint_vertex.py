"""batch_predict's endpoint mode against a Vertex AI Endpoint (tests/fake_vertex's prediction
service on loopback, answering with a model loaded here): rows answered as the in-step path
answers them, each naming the endpoint and the deployed model version that answered it;
requests kept under Vertex AI's 1.5 MB limit, a row over it an error row; the step's Google
credentials (a fake credentials object, no network) sent as a bearer token and refreshed when
expired; what cannot work refused before any output."""

import datetime
import json
import os

import numpy as np
import pytest
from fake_vertex.prediction_service import DEPLOYED, ENDPOINT, LIMIT_BYTES, serving

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.endpoint import connect
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.options import EndpointOptions, vertex_base_url
from tfkfp.components.common.model.ranking import top_k_of

google_auth = pytest.importorskip("google.auth")
from google.auth import credentials as google_credentials  # noqa: E402


class FakeCredentials(google_credentials.Credentials):
    """Google credentials whose tokens live ``lifetime``: each refresh issues a new one.
    A lifetime of 0 is expired at once (google-auth refreshes ahead of expiry)."""

    def __init__(self, lifetime: datetime.timedelta = datetime.timedelta(hours=1)):
        super().__init__()
        self.lifetime, self.issued = lifetime, 0

    def refresh(self, request):
        self.issued += 1
        self.token = f"token-{self.issued}"
        self.expiry = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) \
            + self.lifetime


@pytest.fixture
def credentials(monkeypatch):
    """The step's Google credentials: a fake, given where google.auth.default() is asked."""
    fake = FakeCredentials()
    monkeypatch.setattr(google_auth, "default", lambda scopes=None, **kwargs: (fake, "p"))
    return fake


def answering(predictor):
    """The deployed model: v1 instances in, tfkfp serve's v1 answers out (top class)."""
    def answer(instances):
        features = {}
        for name, spec in predictor.inputs.items():
            values = [instance[name] for instance in instances]
            features[name] = np.array([v.encode() for v in values], object) \
                if spec.dtype == "string" else \
                np.array([np.nan if v is None else v for v in values], spec.dtype)
        ids, scores = top_k_of(np.asarray(predictor.predict(features)), 1)
        return [{"class": predictor.labels[i], "class_id": int(i), "score": float(s)}
                for i, s in zip(ids[:, 0], scores[:, 0])]
    return answer


def vertex(url: str, **kwargs) -> EndpointOptions:
    return EndpointOptions(url, protocol="vertex", **{"batch_rows": 64, "concurrency": 3,
                                                        **kwargs})


def rows_by_id(folder, kind="predictions"):
    return {r["id"]: r for name in sorted(os.listdir(folder)) if name.startswith(kind)
            for r in map(json.loads, open(os.path.join(folder, name)))}


def test_rows_are_answered_as_in_the_step_naming_the_model_version_that_answered(
        demo_dataset, predictor, credentials, tmp_path):
    step = batch_predict("demo", demo_dataset, str(tmp_path / "step"), predictor=predictor)
    with serving(answering(predictor)) as server:
        result = batch_predict("", demo_dataset, str(tmp_path / "vertex"),
                               endpoint=vertex(server.url))
    got, want = rows_by_id(tmp_path / "vertex"), rows_by_id(tmp_path / "step")
    assert sorted(got) == sorted(want) and result.errors == 0
    assert (result.path, result.predictions) == ("endpoint", step.predictions)
    for key, row in got.items():
        assert (row["class"], row["class_id"]) == (want[key]["class"], want[key]["class_id"])
        assert row["score"] == pytest.approx(want[key]["score"], abs=1e-5)
    assert {r["endpoint"] for r in got.values()} == {server.url + ":predict"}
    # the two deployed models took turns; each row names the one that answered it
    versions = {f"{model}@{version}, deployedModelId {deployed}": deployed
                for deployed, model, version in DEPLOYED}
    by_version = {v: sum(r["model_version"] == v for r in got.values()) for v in versions}
    assert by_version == {v: server.rows_by_deployed[d] for v, d in versions.items()}
    assert all(by_version.values())
    assert set(server.authorizations) == {"Bearer token-1"} and credentials.issued == 1


def test_expired_credentials_are_refreshed_before_a_request(demo_dataset, predictor,
                                                           credentials, tmp_path):
    credentials.lifetime = datetime.timedelta(0)  # every token expired when issued
    with serving(answering(predictor)) as server:
        batch_predict("", demo_dataset, str(tmp_path / "out"), endpoint=vertex(server.url))
    # one token got before any request (refused there if it cannot be), then one per request
    assert len(server.authorizations) == credentials.issued - 1 >= 3
    assert len(set(server.authorizations)) == len(server.authorizations)


@pytest.fixture(scope="module")
def wide_rows(string_table, tmp_path_factory):
    """The string model's columns as JSON Lines: 300 rows whose colour is 20 kB of text
    (6 MB in all, several requests' worth), one row of 1.6 MB (over any request alone)."""
    folder = tmp_path_factory.mktemp("wide_rows")
    rng = np.random.default_rng(5)
    with open(folder / "rows.jsonl", "w") as f:
        for i in range(300):
            colour = "blue" * 5_000 if i % 3 else "zzz" * 6_667
            if i == 150:
                colour = "x" * 1_600_000
            f.write(json.dumps({"id": i, "x": float(rng.normal()), "colour": colour}) + "\n")
    return str(folder / "rows.jsonl")


def test_requests_stay_under_the_byte_limit_and_a_row_over_it_is_an_error_row(
        string_table, wide_rows, credentials, tmp_path):
    from tfkfp.components.common.model.predictor import load_predictor

    predictor = load_predictor(string_table.model)
    step_out, out = tmp_path / "step", tmp_path / "vertex"
    batch_predict(string_table.model, wide_rows, str(step_out), keys=["id"],
                  schema_uri=string_table.dataset)
    with serving(answering(predictor)) as server:
        result = batch_predict("", wide_rows, str(out), keys=["id"],
                               schema_uri=string_table.dataset, max_error_fraction=0.01,
                               endpoint=vertex(server.url, batch_rows=256))
    assert max(server.request_bytes) <= LIMIT_BYTES and server.statuses[400] == 0
    assert len(server.request_bytes) > 300 * 20_000 // LIMIT_BYTES  # the batches were cut
    errors = [json.loads(line) for name in sorted(os.listdir(out))
              if name.startswith("errors") for line in open(out / name)]
    assert [e["record"] for e in errors] == [151]  # its line: id 150
    assert "the row alone makes a request of" in errors[0]["reason"]
    assert f"over the endpoint's limit of {LIMIT_BYTES} bytes" in errors[0]["reason"]
    got, want = rows_by_id(out), rows_by_id(step_out)
    assert sorted(got) == sorted(set(want) - {150})  # every other row once
    assert (result.inputs, result.predictions, result.errors) == (300, 299, 1)
    assert all(got[k]["class"] == want[k]["class"] for k in got)


def test_an_endpoint_resource_name_is_called_in_its_region():
    assert vertex_base_url(ENDPOINT) == (
        "https://europe-west4-aiplatform.googleapis.com/v1/" + ENDPOINT)
    url = "https://europe-west4-aiplatform.googleapis.com/v1/" + ENDPOINT
    assert vertex_base_url(url) == url


@pytest.mark.parametrize("change, message", [
    ({"url": "http://127.0.0.1:1/v1/models/m"}, "takes a Vertex AI Endpoint's resource name"),
    ({"url": "endpoints/42"}, "projects/PROJECT/locations/REGION/endpoints/ID"),
    ({"token_file": "/t"}, "called with the step's Google credentials"),
])
def test_vertex_options_that_cannot_work_are_refused(change, message, demo_dataset, tmp_path):
    fields = {"url": ENDPOINT, "protocol": "vertex", **change}
    with pytest.raises(PredictInputError, match=message):
        batch_predict("", demo_dataset, str(tmp_path / "out"),
                      endpoint=EndpointOptions(**fields))
    assert not (tmp_path / "out").exists()


def test_an_endpoint_without_a_deployed_model_is_refused_before_any_output(
        demo_dataset, predictor, credentials, tmp_path):
    with serving(answering(predictor), deployed=()) as server, \
            pytest.raises(PredictInputError, match="no model is deployed on it"):
        batch_predict("", demo_dataset, str(tmp_path / "out"), endpoint=vertex(server.url))
    assert not (tmp_path / "out").exists()


def test_credentials_that_cannot_be_refreshed_are_refused_before_any_request(predictor):
    from google.auth.exceptions import RefreshError

    class Revoked(FakeCredentials):
        def refresh(self, request):
            raise RefreshError("invalid_grant: account not found")

    with serving(answering(predictor)) as server, pytest.raises(
            PredictInputError, match="could not be refreshed: invalid_grant"):
        connect(vertex(server.url), credentials=Revoked())
    assert server.authorizations == []


def test_a_step_without_google_credentials_is_refused_naming_how_to_give_them(monkeypatch):
    from google.auth.exceptions import DefaultCredentialsError

    def no_credentials(scopes=None, **kwargs):
        raise DefaultCredentialsError("Your default credentials were not found.")

    monkeypatch.setattr(google_auth, "default", no_credentials)
    with pytest.raises(PredictInputError, match="no Google credentials.*"
                                                "GOOGLE_APPLICATION_CREDENTIALS"):
        connect(vertex(ENDPOINT))


def test_credentials_can_be_given_and_an_unknown_endpoint_is_refused_naming_it(predictor):
    given = FakeCredentials()
    with serving(answering(predictor)) as server:
        endpoint = connect(vertex(server.url), credentials=given)
        assert endpoint.predict_url == server.url + ":predict"
        assert server.authorizations == ["Bearer token-1"]
        other = server.url.replace("4242", "9999")
        with pytest.raises(PredictInputError, match=f"endpoint {other} answered 404.*"
                                                    "the Vertex AI Endpoint cannot be used"):
            connect(vertex(other), credentials=given)
