import ast
import dataclasses
import importlib
import inspect
import pathlib
import re
import shlex
import textwrap
import typing

import pytest

from tfkfp.cli import docs as cli_docs
from tfkfp.components.common.platform.step_options import StepOptions
from tfkfp.pipelines import docs

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REGENERATE = "python -m tfkfp.cli.docs --write (from the checkout's root)"


@pytest.mark.parametrize("path", sorted(cli_docs.FILES))
def test_generated_sections_are_up_to_date(path):
    """The parameter tables, the sizes table, the CLI reference and the DAG pictures, each
    in the file that holds it, are what the code and the compiled YAML say now."""
    text = (ROOT / path).read_text()
    assert cli_docs.rewrite(text, cli_docs.FILES[path], path) == text, (
        f"{path} is stale: {REGENERATE}")


def test_a_file_without_its_section_is_refused():
    with pytest.raises(ValueError, match=r"README.md has no <!-- dag:training:begin -->"):
        cli_docs.rewrite("# tfkfp\n\n<!-- parameters:begin -->\n<!-- parameters:end -->\n",
                         cli_docs.FILES["README.md"], "README.md")


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


# A core function says None (or an empty tuple) for "none given" where its component, whose
# defaults KFP compiles, says [] or {} (a Python default must not be mutable): the same value.
EMPTY = "(none given)"
# Where a component deliberately spells a core default another way, and why.
SPELLED_AS_TEXT = {
    "hidden_units": "KFP has no tuple parameter: the component takes the layer sizes as text "
                    "('256,128'), which the core parses (common.training.request)",
}
# A core function taking ``**options``: the dataclass whose fields (and defaults) they are.
OPTIONS = {"tfkfp.components.train.core.train": "tfkfp.components.common.training.config."
                                                 "TrainConfig"}


def _normal(name, value):
    if name in SPELLED_AS_TEXT and isinstance(value, str):
        value = tuple(int(u) for u in value.replace(" ", "").split(",") if u)
    if value is None or (isinstance(value, (list, tuple, dict)) and not value):
        return EMPTY
    return tuple(value) if isinstance(value, list) else (type(value).__name__, value)


def called_functions(component):
    """{module.function: function} of its own folder that a component's body imports and
    calls (its core function, and merge, gate, smoke or vertex where it calls those)."""
    function = component.python_func
    package = function.__module__.rpartition(".")[0] + "."  # tfkfp.components.<folder>.
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    imported = {alias.asname or alias.name: (node.module, alias.name)
                for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith(package) for alias in node.names}
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    found = {f"{imported[a][0]}.{imported[a][1]}": getattr(
        importlib.import_module(imported[a][0]), imported[a][1]) for a in called & set(imported)}
    return {name: f for name, f in found.items() if inspect.isfunction(f)}


def core_defaults(qualified, function):
    """{parameter: default} of a core function: its settings from the step options class it
    takes (common.platform.step_options), or its ``**options`` from their dataclass."""
    params = inspect.signature(function).parameters.values()
    out = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    taken = options_class(function)
    if taken is not None:
        out.pop("options", None)
        return {**out, **taken.defaults()}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        assert qualified in OPTIONS, f"{qualified} takes **options: name their dataclass"
        module, _, name = OPTIONS[qualified].rpartition(".")
        for field in dataclasses.fields(getattr(importlib.import_module(module), name)):
            if field.default is not dataclasses.MISSING:
                out[field.name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                out[field.name] = field.default_factory()
    return out


def options_class(function):
    """The step options class a core function's ``options`` parameter takes, if any."""
    annotation = inspect.signature(function).parameters.get("options")
    if annotation is None:
        return None
    for kind in (annotation.annotation, *typing.get_args(annotation.annotation)):
        if isinstance(kind, type) and issubclass(kind, StepOptions):
            return kind
    return None


def test_a_core_function_defaults_a_parameter_as_its_component_does():
    """A parameter a component and the core function it calls both default has one default,
    so calling the core from Python (a notebook, a benchmark, the CLI) means what the step
    means. Required on either side is no conflict: the component always passes it."""
    checked = set()
    for step, component in docs.components():
        inputs = docs.signature(component)
        called = called_functions(component)
        assert called or all(d == docs.REQUIRED for _, d in inputs.values()), (
            f"component {step} has defaults but calls no function of its own folder")
        for qualified, function in called.items():
            for name, default in core_defaults(qualified, function).items():
                if inputs.get(name, (None, docs.REQUIRED))[1] == docs.REQUIRED:
                    continue
                checked.add(step)
                assert _normal(name, inputs[name][1]) == _normal(name, default), (
                    f"{name}: {inputs[name][1]!r} in component {step}, but {default!r} in "
                    f"{qualified}")
    assert {"shard_tfrecords", "train", "diagnose_bottleneck", "freeze_quantize",
            "export_tflite", "batch_predict", "deploy_model"} <= checked


def test_a_shard_flag_defaults_as_the_core_and_the_component_do():
    """``tfkfp shard`` calls shard_tfrecords' core: a flag whose dest is one of its parameters
    has its default (and the component's), so the command shards as the step does."""
    from tfkfp.components.shard_tfrecords import core
    from tfkfp.components.shard_tfrecords.component import shard_tfrecords

    shard = next(parser for name, _, parser in cli_docs.cli_commands() if name == "shard")
    defaults = core_defaults("", core.shard_tfrecords)
    inputs = docs.signature(shard_tfrecords)
    compared = []
    for action in shard._actions:
        if action.dest not in defaults:
            continue
        compared.append(action.dest)
        assert _normal(action.dest, action.default) == _normal(
            action.dest, defaults[action.dest]), (
            f"tfkfp shard {'/'.join(action.option_strings)}: default {action.default!r}, but "
            f"{defaults[action.dest]!r} in core.shard_tfrecords")
        if inputs.get(action.dest, (None, docs.REQUIRED))[1] != docs.REQUIRED:
            assert _normal(action.dest, action.default) == _normal(
                action.dest, inputs[action.dest][1]), action.dest
    assert {"label", "keys", "split_column", "column_types", "eval_fraction", "layout",
            "block_rows", "missing", "threads"} <= set(compared)


def test_every_component_of_every_folder_is_listed():
    names = [name for name, _ in docs.components()]
    folders = sorted(p.parent.name for p in (ROOT / "components").glob("*/component.py"))
    assert set(folders) <= set(names), f"components missing from the tables: {folders}"
    assert {"merge_datasets", "merge_predictions", "vertex_batch_predict"} <= set(names)
    assert len(names) == len(set(names)), f"a component is listed twice: {names}"


def test_a_component_module_that_fails_to_import_fails_the_tables(monkeypatch):
    monkeypatch.setattr(docs, "component_modules", lambda: ["tfkfp.components.nothing.component"])
    with pytest.raises(ModuleNotFoundError, match="tfkfp.components.nothing"):
        docs.generated()


# ---------------------------------------------------------------- DAG pictures


def test_a_dag_picture_has_every_task_and_dependency_of_the_compiled_yaml():
    from tfkfp.pipelines import dag

    picture = dag.mermaid("training")
    assert picture.startswith("```mermaid\nflowchart TD\n") and picture.endswith("\n```")
    for task in ("fingerprint_input", "merge_datasets", "train", "freeze_quantize",
                 "export_tflite", "batch_predict"):
        assert f'  {task}["' in picture, task
    for before, after in (("for_loop_1", "merge_datasets"),
                          ("merge_datasets", "condition_branches_3"),
                          ("freeze_quantize", "export_tflite"),
                          ("condition_branches_3", "batch_predict")):
        assert f"  {before} --> {after}\n" in picture, (before, after)
    assert 'subgraph for_loop_1 ["for-loop-1: ParallelFor over group-numbers.Output"]' in picture
    assert 'subgraph condition_6 ["deploy: if deploy != \'none\'"]' in picture
    # the If / Else of tune and train, the Else drawn as the condition it stands for
    assert 'subgraph condition_4 ["tune: if tune_trials > 0"]' in picture
    assert 'subgraph condition_5 ["train: if tune_trials <= 0"]' in picture
    assert '    shard_tfrecords["shard-tfrecords"]' in picture  # inside the loop's frame


def test_a_dag_picture_draws_branches_nested_pipelines_and_repeated_names():
    from tfkfp.pipelines import dag

    picture = dag.mermaid("batch_prediction")
    assert '["existing-shards: if input_uri == \'\'"]' in picture  # the Else of shard-input
    assert '["tfkfp-predict-shards (pipeline)"]' in picture
    assert 'importer["importer: model_uri"]' in picture
    ids = [line.split("[")[0].split()[-1] for line in picture.splitlines() if '["' in line]
    assert len(ids) == len(set(ids)), f"a Mermaid id is used twice: {ids}"
    assert sum('["batch-predict"]' in line for line in picture.splitlines()) == 2


# ---------------------------------------------------------------- links and commands

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```+|~~~+)([^\n]*)\n(.*?)^\1[ \t]*$", re.S | re.M)


def markdown_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            *sorted((ROOT / "components").glob("*/README.md"))]


def _prose(text):
    """The text without fenced code blocks and inline code, where links are not links."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def _anchors(path):
    """The heading anchors GitHub makes for a Markdown file."""
    seen, anchors = {}, set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", FENCE.sub("", path.read_text()), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_the_docs_are_where_the_readme_says():
    assert len(markdown_files()) > 15, markdown_files()
    assert len(README.read_text().splitlines()) < 250


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_that_exists(path):
    broken = []
    for target in LINK.findall(_prose(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target} (no {linked})")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no heading #{anchor} in {linked.relative_to(ROOT)})")
    assert not broken, f"{path.relative_to(ROOT)}: broken links: {broken}"


def shell_commands(text):
    """Each command of the fenced bash blocks of a Markdown text, as its words: lines joined
    at a trailing backslash, split at && ; | and the like, comments dropped."""
    for match in FENCE.finditer(text):
        if match.group(2).strip() not in ("bash", "sh", "shell"):
            continue
        for line in match.group(3).replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            command = []
            for token in lexer:
                if set(token) <= set(";&|"):  # && || ; | &
                    yield from [command] if command else []
                    command = []
                else:
                    command.append(token)
            yield from [command] if command else []


def tfkfp_commands():
    found = []
    for path in markdown_files():
        for words in shell_commands(path.read_text()):
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # VAR=... tfkfp
                words = words[1:]
            if words and words[0] == "tfkfp":
                found.append((str(path.relative_to(ROOT)), words))
    return found


def test_the_commands_are_found():
    """The command finder finds the README's commands, so the test below is not vacuous."""
    commands = [" ".join(words) for path, words in tfkfp_commands() if path == "README.md"]
    assert "tfkfp demo" in commands
    assert ("tfkfp run training --local --set input_uri=tfkfp-demo/data/digits.csv "
            "--set label=label --set keys=id") in commands
    assert any(c.startswith("tfkfp submit training --host URL --image") for c in commands)
    assert len(tfkfp_commands()) >= 20
    assert list(shell_commands("```bash\nA=1 tfkfp run x \\\n  --local  # note\nls | wc\n```\n")
                ) == [["A=1", "tfkfp", "run", "x", "--local"], ["ls"], ["wc"]]


@pytest.mark.parametrize("path,words", tfkfp_commands(),
                         ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else v)
def test_every_tfkfp_command_in_the_docs_parses(path, words):
    """Each `tfkfp ...` command shown in a bash block parses with the CLI's own parser; a
    `run` or `submit` names a pipeline that exists, and its --set values are ones that
    pipeline takes (every key, type and required input, and the steps' own checks)."""
    from tfkfp.cli import main as cli
    from tfkfp.pipelines import registry

    try:
        args = cli._parser().parse_args(words[1:])
    except SystemExit as exit_:
        if exit_.code:
            pytest.fail(f"{path}: {' '.join(words)!r} does not parse (exit {exit_.code})")
        return  # --help or --version
    if args.command in ("run", "submit"):
        assert args.name in registry.names(), f"{path}: no pipeline {args.name!r}"
        try:
            registry.parse_parameters(args.name, args.parameters)
        except registry.ParameterError as err:
            pytest.fail(f"{path}: {' '.join(words)!r}: {err}")


def test_write_rewrites_a_stale_section_and_refuses_a_file_without_one(tmp_path, capsys):
    stale = tmp_path / "page.md"
    stale.write_text("# A page\n\n" + docs.begin("dag:edge_export") + "\nold\n"
                     + docs.end("dag:edge_export") + "\n")
    assert cli_docs.main(["--write", str(stale)]) == 0
    assert "flowchart TD" in stale.read_text() and "old" not in stale.read_text()
    assert cli_docs.main(["--write", str(stale)]) == 0 and "unchanged" in capsys.readouterr().out
    plain = tmp_path / "plain.md"
    plain.write_text("# No generated section\n")
    assert cli_docs.main(["--write", str(plain)]) == 1
    assert "holds no generated section" in capsys.readouterr().err
