"""``python -m tfkfp.cli.docs --write``: rewrite the generated parts of the docs, run from
the checkout's root; ``--write FILE ...`` rewrites the sections those files hold.

pipelines/docs.py writes the parameter and sizes tables, the components' READMEs and the DAG
pictures. This module adds the one section the pipelines cannot write without importing the
command that sits above them: the ``tfkfp`` command's reference, from its parser.
"""

import argparse
import os
import sys
from typing import List, Tuple

from tfkfp.pipelines import docs

CLI = "cli"
# Which generated sections each file holds: the pipelines' files and the CLI reference.
FILES = {**docs.FILES, "docs/reference/cli.md": [CLI]}


def cli_commands() -> List[Tuple[str, str, argparse.ArgumentParser]]:
    """(name, purpose, parser) of every ``tfkfp`` subcommand, in the CLI's order. The parser
    is built with the environment cleared, so that no default read from it
    (``$TFKFP_IMAGE``, ``$TFKFP_KFP_TOKEN``) leaks into the docs."""
    from unittest import mock

    from tfkfp.cli import main as cli

    with mock.patch.dict(os.environ, clear=True):
        parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help or "" for a in commands._choices_actions}
    return [(name, sub.description or helps.get(name, ""), sub)
            for name, sub in commands.choices.items()]


def cli_reference() -> str:
    """Each subcommand's purpose and a table of its arguments, between the CLI markers."""
    parts = [docs.begin(CLI)]
    for name, purpose, parser in cli_commands():
        parts += ["", f"### `tfkfp {name}`", "",
                  docs.html_cell(purpose[:1].upper() + purpose[1:]), "",
                  "| argument | values | default | meaning |", "|---|---|---|---|"]
        parts += [_cli_row(a) for a in parser._actions
                  if not isinstance(a, argparse._HelpAction)]
    return "\n".join(parts + ["", docs.end(CLI)])


def _cli_row(action: argparse.Action) -> str:
    flags = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
    if action.choices:
        values = ", ".join(f"`{c}`" for c in action.choices)
    elif action.nargs == 0:
        values = "flag"
    else:
        values = f"`{action.metavar or action.dest.upper()}`"
        values += " ..." if action.nargs in ("+", "*") else ""
        values += " (repeatable)" if isinstance(action, argparse._AppendAction) else ""
    if action.required or not action.option_strings:
        default = docs.REQUIRED
    elif action.default in (None, "", [], False) or action.nargs == 0:
        default = ""
    else:
        default = f"`{' '.join(map(str, action.default))}`" if isinstance(
            action.default, list) else f"`{action.default}`"
    return f"| {flags} | {values} | {default} | {docs.html_cell(action.help or '')} |"


SECTIONS = {CLI: cli_reference}


def rewrite(text: str, required=(), where: str = "the file") -> str:
    """pipelines.docs.rewrite, the CLI reference included."""
    return docs.rewrite(text, required, where, SECTIONS)


def main(argv=None) -> int:
    return docs.main(argv, "python -m tfkfp.cli.docs", FILES, SECTIONS)


if __name__ == "__main__":
    sys.exit(main())
