"""The shell commands of the README and docs/, read as a shell would split them, and the
small data that stands in for their placeholders when tests run them (tests/docs)."""

import functools
import pathlib
import re
import shlex
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

    def _table(self, path: pathlib.Path, rows: int, seed: int) -> str:
        import numpy as np

        rng = np.random.default_rng(seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["id,x1,x2,colour,label"]
        for i in range(rows):
            x1, x2 = rng.normal(size=2).round(3)
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
