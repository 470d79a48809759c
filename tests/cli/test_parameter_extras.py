"""A parameter value whose task needs an extra this install leaves out (``launcher=vertex``:
google-cloud-aiplatform) ends `tfkfp run` before its first task with the one line naming the
extra, as a command without its own extra does, rather than failing inside the task."""

import pytest

from tfkfp.cli import extras
from tfkfp.cli.main import main
from tfkfp.pipelines import registry

VERTEX_LINE = ("tfkfp run needs the 'vertex' extra, which this install leaves out (no "
               "google.cloud.aiplatform): from a tfkfp checkout, pip install '.[vertex]'")


@pytest.fixture
def started(monkeypatch):
    """The pipelines a command started: none, if refused before the run."""
    from tfkfp.cli import local_run

    runs = []
    monkeypatch.setattr(local_run, "run_pipeline", lambda *a, **k: runs.append(a))
    return runs


@pytest.fixture
def without_vertex(monkeypatch):
    """This install as if without the vertex extra: its modules cannot be found."""
    installed = extras._absent
    monkeypatch.setattr(extras, "_absent", lambda package: package.startswith(
        "google.cloud.aiplatform") or installed(package))


@pytest.mark.parametrize("name, sets", [
    ("training", ["input_uri=gs://b/data.csv", "label=label", "launcher=vertex"]),
    ("training", ["input_uri=gs://b/data.csv", "label=label", "deploy=vertex"]),
    ("serving", ["model_uri=gs://b/model", "dataset_uri=gs://b/dataset", "target=vertex"]),
    ("batch_prediction", ["model_uri=gs://b/model", "input_uri=gs://b/new.csv",
                          "endpoint_protocol=vertex",
                          "endpoint_url=projects/p/locations/europe-west4/endpoints/1"]),
])
def test_a_value_needing_the_vertex_extra_is_refused_before_the_run_in_one_line(
        name, sets, without_vertex, started, tmp_path, capsys):
    args = ["run", name, "--local", "--pipeline-root", str(tmp_path / "root")]
    assert main(args + [a for s in sets for a in ("--set", s)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [VERTEX_LINE], err
    assert not started and not (tmp_path / "root").exists()


def test_a_run_that_needs_no_vertex_starts_without_the_vertex_extra(without_vertex, started,
                                                                     tmp_path, monkeypatch):
    from tfkfp.cli import local_run

    monkeypatch.setattr(local_run, "summary_lines", lambda run: [])
    assert main(["run", "training", "--pipeline-root", str(tmp_path / "root"), "--set",
                 "input_uri=gs://b/data.csv", "--set", "label=label"]) == 0
    assert len(started) == 1


def test_every_value_that_needs_an_extra_is_one_a_pipeline_takes():
    """A renamed parameter would silently stop the check: each entry names an input of a
    pipeline and an extra of the table."""
    inputs = {key for name in registry.names()
              for key in registry.load(name).component_spec.inputs or {}}
    counts = [((name, "above 0"), extra) for name, extra in extras.COUNT_EXTRAS.items()]
    for (parameter, _), extra in [*extras.PARAMETER_EXTRAS.items(), *counts]:
        assert parameter in inputs, f"no pipeline takes {parameter!r}"
        assert extra in extras.EXTRA_MODULES, extra


def test_a_beam_runner_without_the_beam_extra_is_refused_before_the_run_in_one_line(
        started, tmp_path, capsys, monkeypatch):
    installed = extras._absent
    monkeypatch.setattr(extras, "_absent", lambda package: package.startswith(
        "apache_beam") or installed(package))
    assert main(["run", "batch_prediction", "--pipeline-root", str(tmp_path / "root"),
                 "--set", "model_uri=gs://b/model", "--set", "dataset_uri=gs://b/dataset",
                 "--set", "beam_runner=direct"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "tfkfp run needs the 'beam' extra, which this install leaves out (no apache_beam): "
        "from a tfkfp checkout, pip install '.[beam]'"]
    assert not started


@pytest.mark.parametrize("name, sets, module, extra", [
    ("tuning", ["dataset_uri=gs://b/dataset"], "optuna", "tune"),
    ("training", ["input_uri=gs://b/data.csv", "label=label", "tune_trials=4"], "optuna",
     "tune"),
    ("streaming_prediction", ["model_uri=gs://b/model",
                              "subscription=projects/p-123456/subscriptions/rows",
                              "output_topic=projects/p-123456/topics/out",
                              "dead_letter_topic=projects/p-123456/topics/dead"],
     "apache_beam", "beam"),
])
def test_a_pipeline_whose_step_needs_an_extra_is_refused_before_the_run_in_one_line(
        name, sets, module, extra, started, tmp_path, capsys, monkeypatch):
    installed = extras._absent
    monkeypatch.setattr(extras, "_absent", lambda package: package.startswith(module)
                        or installed(package))
    args = ["run", name, "--pipeline-root", str(tmp_path / "root")]
    assert main(args + [a for s in sets for a in ("--set", s)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"tfkfp run needs the '{extra}' extra, which this install leaves out (no {module}): "
        f"from a tfkfp checkout, pip install '.[{extra}]'"]
    assert not started


def test_every_pipeline_that_needs_an_extra_is_one_of_the_suite():
    assert set(extras.PIPELINE_EXTRAS) <= set(registry.names())
    assert set(extras.PIPELINE_EXTRAS.values()) <= set(extras.EXTRA_MODULES)
