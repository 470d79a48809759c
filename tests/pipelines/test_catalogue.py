"""Each component folder carries what kubeflow/pipelines-components asks of an entry:
metadata.yaml within the schema's rules, OWNERS, and a README generated from both that tells
how to load the component by itself."""

import datetime
import importlib
import pathlib
import re
import shutil

import pytest

from tfkfp.pipelines import catalogue

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("folder", catalogue.folders())
def test_every_component_folder_has_a_valid_entry(folder):
    assert catalogue.problems(folder, today=datetime.date(2026, 11, 26)) == []


def test_every_folder_with_a_component_is_in_the_catalogue():
    assert catalogue.folders() == sorted(
        p.parent.name for p in (ROOT / "components").glob("*/component.py"))


@pytest.mark.parametrize("folder", catalogue.folders())
def test_the_readme_loads_the_components_it_names(folder):
    text = (ROOT / "components" / folder / "README.md").read_text()
    module, names = re.search(r"from (tfkfp\.components\.\S+) import (.+)", text).groups()
    loaded = importlib.import_module(module)
    for name in names.split(", "):
        assert hasattr(getattr(loaded, name), "component_spec"), name
        assert f"## `{name}`" in text
    assert "- Last verified: " in text and "- Owners: " in text


@pytest.fixture
def entry(tmp_path, monkeypatch):
    """A copy of train's folder entry the test may spoil."""
    shutil.copytree(ROOT / "components" / "train", tmp_path / "train",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(catalogue, "COMPONENTS", str(tmp_path))
    return tmp_path / "train"


@pytest.mark.parametrize("change, message", [
    (("stability: beta", "stability: ready"), "stability 'ready' is not one of alpha, beta"),
    (("name: train", "name: trainer"), "name 'trainer' is not the folder's, 'train'"),
    (("    - name: Pipelines", "    - name: Argo"),
     "dependencies.kubeflow must name Pipelines"),
    (("'>=2.14'", "'2.14 or later'"), "Pipelines version '2.14 or later' is not a range"),
    (("2026-11-26T00:00:00Z", "2026-11-26"), "has no time zone"),
    (("2026-11-26T00:00:00Z", "last week"), "is not an RFC 3339 time"),
])
def test_a_spoiled_entry_is_refused_naming_the_field(entry, change, message):
    meta = entry / "metadata.yaml"
    text = meta.read_text().replace('">=2.14"', "'>=2.14'")
    assert change[0] in text
    meta.write_text(text.replace(*change))
    found = catalogue.problems("train", today=datetime.date(2026, 11, 26))
    assert any(message in problem for problem in found), found


def test_an_entry_not_verified_for_a_year_is_refused(entry):
    assert catalogue.problems("train", today=datetime.date(2027, 11, 26)) == []
    (problem,) = catalogue.problems("train", today=datetime.date(2027, 11, 28))
    assert "is 367 days old (at most 365): run the component's tests" in problem


def test_an_entry_without_owners_is_refused(entry):
    (entry / "OWNERS").write_text("approvers: []\n")
    assert catalogue.problems("train", today=datetime.date(2026, 11, 26)) == [
        "components/train/OWNERS: no approvers"]
