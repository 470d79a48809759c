import pathlib

import pytest

from tfkfp.pipelines import docs

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_parameter_tables_match_the_docstrings():
    text = README.read_text()
    assert docs.rewrite(text) == text, (
        "the README's parameter tables are stale: python -m tfkfp.pipelines.docs --write "
        "README.md")


def test_every_component_parameter_is_documented():
    for name, component in docs.components():
        for row in docs.table(component)[2:]:
            assert not row.rstrip().endswith("|  |"), f"{name}: undocumented {row}"


def test_every_pipeline_output_has_a_name_and_a_description():
    from tfkfp.pipelines import registry

    for name in registry.names():
        for row in docs.table(registry.load(name))[2:]:
            assert not row.startswith("| `Output` |"), f"{name}: an unnamed output {row}"
            assert not row.rstrip().endswith("|  |"), f"{name}: undocumented {row}"


def test_a_parameter_name_means_one_thing_everywhere():
    """One name per concept: wherever a parameter name appears (component or pipeline), it
    has one type and one default, so a value means the same to every step it reaches."""
    seen = {}
    for step, function in docs.steps():
        for name, (kind, default) in docs.signature(function).items():
            first = seen.setdefault(name, (step, kind, default))
            if default == docs.REQUIRED or first[2] == docs.REQUIRED:
                assert kind == first[1], f"{name}: {kind} in {step}, {first[1]} in {first[0]}"
                continue
            assert (kind, default) == first[1:], (
                f"{name}: {kind} {default!r} in {step}, but {first[1]} {first[2]!r} in "
                f"{first[0]}")


def test_every_component_of_every_folder_is_listed():
    names = [name for name, _ in docs.components()]
    folders = sorted(p.parent.name for p in (README.parent / "components").glob("*/component.py"))
    assert set(folders) <= set(names), f"components missing from the tables: {folders}"
    assert {"merge_datasets", "merge_predictions", "vertex_batch_predict"} <= set(names)
    assert len(names) == len(set(names)), f"a component is listed twice: {names}"


def test_a_component_module_that_fails_to_import_fails_the_tables(monkeypatch):
    monkeypatch.setattr(docs, "component_modules", lambda: ["tfkfp.components.nothing.component"])
    with pytest.raises(ModuleNotFoundError, match="tfkfp.components.nothing"):
        docs.generated()
