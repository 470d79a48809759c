"""docs/reference/names.md's rename table is true: an old name listed as not accepted is
gone from the component or module it names, and its new name is there."""

import importlib
import pathlib
import re

from tfkfp.pipelines import docs

ROOT = pathlib.Path(__file__).resolve().parents[2]
RENAME_ROW = re.compile(r"^\| [\d.]+ \| (?P<where>[^|]+) \| `(?P<old>[^`]+)` \| `(?P<new>[^`]+)` "
                        r"\| (?P<accepted>[^|]+) \|$")


def renames():
    text = (ROOT / "docs" / "reference" / "names.md").read_text()
    rows = [m.groupdict() for m in map(RENAME_ROW.match, text.splitlines()) if m]
    assert rows, "no rows in the rename table"
    return rows


def test_a_renamed_component_parameter_has_only_its_new_name():
    components = dict(docs.components())
    checked = 0
    for row in renames():
        step = row["where"].split()[0]
        if step not in components:
            continue
        names = docs.signature(components[step])
        assert row["new"] in names, f"{step} has no parameter {row['new']}"
        if row["accepted"].startswith("no"):
            assert row["old"] not in names, f"{step} still has {row['old']}"
        checked += 1
    assert checked


def test_a_renamed_module_is_importable_by_its_new_name_only():
    modules = [row for row in renames() if row["where"].strip() == "module"]
    assert modules
    for row in modules:
        importlib.import_module(row["new"])
        try:
            importlib.import_module(row["old"])
        except ModuleNotFoundError:
            continue
        raise AssertionError(f"{row['old']} still imports")


SYNONYM_ROW = re.compile(r"^\| (?P<where>[^|]+) \| `(?P<name>[^`]+)` \| [^|]+ \|$")


def test_each_name_of_the_synonyms_table_is_a_parameter_where_it_says():
    from tfkfp.pipelines import registry

    text = (ROOT / "docs" / "reference" / "names.md").read_text()
    section = text.split("## Same idea")[1].split("## Renamed")[0]
    rows = [m.groupdict() for m in map(SYNONYM_ROW.match, section.splitlines()) if m]
    components = dict(docs.components())
    assert len(rows) == 4
    for row in rows:
        for where in re.findall(r"`?([a-z_]+)`?(?: pipeline)?", row["where"]):
            owner = registry.load(where) if where in registry.names() else components[where]
            assert row["name"] in docs.signature(owner), f"{where} has no {row['name']}"


def test_a_renamed_pipeline_parameter_is_still_taken_by_its_old_name(capsys):
    """batch_prediction's csv_uri became input_uri (it shards every input format): a saved
    ``--set csv_uri=...`` still works, and says the new name."""
    from tfkfp.pipelines import registry

    values = registry.parse_parameters("batch_prediction", [
        "model_uri=gs://b/model", "csv_uri=gs://b/new.csv"])
    assert values == {"model_uri": "gs://b/model", "input_uri": "gs://b/new.csv"}
    assert "batch_prediction's csv_uri is now called input_uri" in capsys.readouterr().err
    inputs = registry.load("batch_prediction").component_spec.inputs
    assert "input_uri" in inputs and "csv_uri" not in inputs
    for renamed in registry.RENAMED.values():  # the names page lists each rename
        for old, new in renamed.items():
            assert any((row["old"], row["new"]) == (old, new) for row in renames()), old
