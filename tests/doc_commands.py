"""The shell commands of the README and docs/, read as a shell would split them, and the
small data that stands in for their placeholders when tests run them (tests/docs)."""

import contextlib
import functools
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap
from typing import List, NamedTuple, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
# a fence at the margin or indented in a list item (its body dedented by as much)
FENCE = re.compile(r"^([ \t]*)(```+|~~~+)([^\n]*)\n(.*?)^\1\2[ \t]*$", re.S | re.M)
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
SHELL_SYNTAX = ("for", "done")  # loop lines of a block: their body is classified


class Command(NamedTuple):
    page: str
    words: Tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)


def markdown_files() -> List[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def block_lines(language: str, body: str) -> List[str]:
    """A block's command lines: backslash continuations joined; a console block's $-lines."""
    lines = body.replace("\\\n", " ").splitlines()
    if language != "console":
        return lines
    return [line[2:] for line in lines if line.startswith("$ ")]


def commands_of(line: str) -> List[Tuple[str, ...]]:
    """A line's commands, split at && || ; | &, comments dropped; a loop's ``do`` dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, words = [], []
    for token in [*lexer, ";"]:
        if set(token) <= set(";&|"):
            words = words[1:] if words[:1] == ["do"] else words
            if words and words[0] not in SHELL_SYNTAX:
                commands.append(tuple(words))
            words = []
        else:
            words.append(token)
    return commands


def blocks() -> List[Tuple[str, List[Command]]]:
    """(page#n, its commands) for every shell block of the README and docs/."""
    found = []
    for path in markdown_files():
        page = str(path.relative_to(ROOT))
        shell = [m for m in FENCE.finditer(path.read_text())
                 if m.group(3).strip() in SHELL_LANGUAGES]
        for number, match in enumerate(shell, 1):
            body = textwrap.dedent(match.group(4)) if match.group(1) else match.group(4)
            lines = block_lines(match.group(3).strip(), body)
            found.append((f"{page}#{number}", [Command(page, words) for line in lines
                                               for words in commands_of(line)]))
    return found


class Materials:
    """The small data the placeholders stand for, made once, when a block first needs it."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.stack = contextlib.ExitStack()  # what close() stops: the served model

    def close(self) -> None:
        self.stack.close()

    @functools.cached_property
    def served_url(self) -> str:
        from serve_process import running

        server = self.stack.enter_context(running(self.digits_model, tmp_path=self.root))
        return f"http://127.0.0.1:{server.port}"

    def _table(self, path: pathlib.Path, rows: int, seed: int) -> str:
        import numpy as np

        rng = np.random.default_rng(seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["id,x1,x2,colour,label"]
        for i in range(rows):
            x1, x2 = rng.normal(size=2)
            # no row within 0.5 of the boundary: a TFLite model that rounds differently still
            # answers every eval row as the SavedModel does, so the export gate passes
            x1 += 0.5 * np.sign(x1 + x2) if abs(x1 + x2) < 0.5 else 0.0
            x1, x2 = round(float(x1), 3), round(float(x2), 3)
            colour = ("red", "green", "blue")[i % 3]
            lines.append(f"{i},{x1},{x2},{colour},{'yes' if x1 + x2 > 0 else 'no'}")
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    @functools.cached_property
    def your_table(self) -> str:
        return self._table(self.root / "your-data.csv", 240, seed=1)

    @functools.cached_property
    def tables_folder(self) -> str:
        for part in range(4):
            self._table(self.root / "folder" / f"part-{part}.csv", 60, seed=10 + part)
        return str(self.root / "folder") + "/"

    @functools.cached_property
    def data_tables(self) -> str:
        for part in range(2):
            self._table(self.root / "data" / f"part-{part}.csv", 60, seed=20 + part)
        return str(self.root / "data" / "*.csv")

    @functools.cached_property
    def digits_csv(self) -> str:
        from tfkfp.components.common.data.demo_data import write_demo_data

        return str(write_demo_data(str(self.root / "demo")).csv)

    @functools.cached_property
    def digits_dataset(self) -> str:
        from tfkfp.components.shard_tfrecords.core import shard_tfrecords

        dataset = str(self.root / "digits-dataset")
        shard_tfrecords(self.digits_csv, dataset, label="label", keys=["id"])
        return dataset

    @functools.cached_property
    def digits_model(self) -> str:
        from tfkfp.components.train.core import train

        model = str(self.root / "digits-model")
        train(self.digits_dataset, model, epochs=1)
        return model

    @functools.cached_property
    def photos(self) -> str:
        import numpy as np
        from PIL import Image

        rng = np.random.default_rng(3)
        for label in ("cat", "dog"):
            (self.root / "photos" / label).mkdir(parents=True)
            for i in range(12):
                pixels = rng.integers(0, 256, size=(96, 96, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(self.root / "photos" / label / f"{i}.png")
        return str(self.root / "photos") + "/"


# Pages whose blocks build on each other (a rendered overlay, then checks against it; a body
# file, then a request with it): their
# commands run in one folder, in page order, none skipped as already run elsewhere.
RUN_AS_ONE = ("docs/how-to/ci.md", "docs/how-to/serving.md")
REPO_PATHS = ("manifests", "pipelines")  # copied into a block's folder when a command names one


def stage_repo_paths(commands: List[Command], folder: pathlib.Path) -> None:
    """Copy the repository folders the commands name (manifests/, pipelines/' YAML) into the
    folder they run in, so a command may change them as a user's checkout would."""
    import shutil

    named = {word.split("/")[0] for c in commands for word in c.words if "/" in word}
    for name in REPO_PATHS:
        if name in named and not (folder / name).exists():
            shutil.copytree(ROOT / name, folder / name,
                            ignore=shutil.ignore_patterns("*.py", "__pycache__"))


def shell_words(words: List[str]) -> Tuple[List[str], str]:
    """The words as a shell passes them (relative globs expanded), and the file a ``>``
    redirects the output to ("" for none)."""
    import glob

    target = ""
    if ">" in words:
        target = words[words.index(">") + 1]
        words = words[:words.index(">")]
    expanded = [match for word in words
                for match in (sorted(glob.glob(word)) if _relative_glob(word) else [])
                or [word]]
    return expanded, target


def _relative_glob(word: str) -> bool:
    return any(c in word for c in "*?[") and not word.startswith(("/", "-")) and "=" not in word


def pages_as_one(found: List) -> List:
    """The blocks, those of a RUN_AS_ONE page joined into one (named after the page)."""
    out: List = []
    for name, commands in found:
        page = name.partition("#")[0]
        if page in RUN_AS_ONE and out and out[-1][0] == page:
            out[-1][1].extend(commands)
        else:
            out.append((page if page in RUN_AS_ONE else name, list(commands)))
    return out


def run_child(words: List[str]) -> Tuple[int, str, str]:
    """Exit status, stdout and stderr of a python, kubectl or curl command in a child."""
    if words[0] in ("kubectl", "curl"):
        from cluster_tools import tool

        words = [tool(words[0]), *words[1:]]  # skips where it is not installed
    else:
        assert words[0] in ("python", "python3"), words
        words = [sys.executable, *words[1:]]
    result = subprocess.run(words, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return result.returncode, result.stdout, result.stderr
