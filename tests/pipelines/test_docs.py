import pathlib

from tfkfp.pipelines import docs

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_parameter_tables_match_the_docstrings():
    text = README.read_text()
    assert docs.rewrite(text) == text, (
        "the README's parameter tables are stale: python -m tfkfp.pipelines.docs --write "
        "README.md")


def test_every_component_parameter_is_documented():
    import importlib

    for name in docs.available_components():
        component = getattr(importlib.import_module(f"tfkfp.components.{name}.component"), name)
        for row in docs.table(component)[2:]:
            assert not row.rstrip().endswith("|  |"), f"{name}: undocumented {row}"
