"""The README and docs/ read as written: nothing installs a name no package index holds, and
sentences outside code stay short enough to scan.

tfkfp has no release on a package index, so an install names a checkout (``.``), a wheel
built there, or a ``git+`` URL; ``pip install tfkfp`` would fetch whatever someone else
published under that name.
"""

import re
import statistics
from typing import List, Tuple

import pytest
from doc_commands import FENCE, ROOT, markdown_files

from tfkfp.components._image import __version__

# `pip install tfkfp`, `pip install 'tfkfp[local]'`, ... not followed by `@ SOURCE`
BARE_INSTALL = re.compile(r"pip3? install\s+(?:-\S+\s+)*[\"']?tfkfp(?:\[[^\]]*\])?[\"']?"
                          r"(?!\s*@)(?=[\s`\"']|$)")
WHEEL = re.compile(r"tfkfp-(\d[\w.]*)-py3-none-any\.whl")
MAX_WORDS = 40
# Pages written before the check, with sentences over MAX_WORDS: each is to be rewritten and
# taken off. A new page is checked from its first commit.
LONG_SENTENCES_ALLOWED = {
    "docs/benchmarks.md",
}


def pages() -> List[Tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text()) for p in markdown_files()]


@pytest.mark.parametrize("page, text", pages(), ids=[p for p, _ in pages()])
def test_no_page_installs_a_name_no_index_holds(page, text):
    found = [m.group(0) for m in BARE_INSTALL.finditer(text)]
    assert not found, (f"{page}: {found}: tfkfp is on no package index; install from a "
                       "checkout (pip install '.[local]') or a wheel built there")


@pytest.mark.parametrize("page, text", pages(), ids=[p for p, _ in pages()])
def test_a_wheel_named_in_the_docs_is_this_version(page, text):
    versions = set(WHEEL.findall(text))
    assert versions <= {__version__}, f"{page}: wheel of version {versions}, not {__version__}"


@pytest.mark.parametrize("text, found", [
    ("pip install tfkfp", True), ("pip install 'tfkfp[local]' && x", True),
    ("`pip install tfkfp`", True), ('pip install -U "tfkfp[serve]"', True),
    ("pip install 'tfkfp[local] @ git+https://example.org/tfkfp@v0.1.0'", False),
    ("pip install '.[local]'", False), ("pip install tfkfp-tools", False),
    ("pip install 'dist/tfkfp-0.1.0-py3-none-any.whl[local]'", False),
])
def test_the_install_pattern(text, found):
    assert bool(BARE_INSTALL.search(text)) is found


def prose(text: str) -> str:
    """The page without code blocks, inline code, tables, HTML comments and link targets."""
    text = FENCE.sub(" ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    text = re.sub(r"`[^`]*`", "CODE", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def sentences(text: str) -> List[str]:
    """Sentences of the prose: split at . ! ? before a space, and at headings, list items
    and blank lines (each ends what came before)."""
    blocks = re.split(r"\n\s*\n|\n\s*(?=[-*] |\d+\. |#)", prose(text))
    return [s.strip() for block in blocks
            for s in re.split(r"(?<=[.!?])\s+", " ".join(block.lstrip("# ").split()))
            if s.strip()]


def long_sentences(text: str) -> List[str]:
    return [s for s in sentences(text) if len(s.split()) > MAX_WORDS]


@pytest.mark.parametrize("page, text", pages(), ids=[p for p, _ in pages()])
def test_sentences_stay_under_forty_words(page, text):
    """Reports the page's sentence lengths; fails on one over MAX_WORDS unless the page is
    still listed in LONG_SENTENCES_ALLOWED."""
    lengths = [len(s.split()) for s in sentences(text)] or [0]
    print(f"{page}: {len(lengths)} sentences, mean {statistics.mean(lengths):.1f} words, "
          f"longest {max(lengths)}")
    long = long_sentences(text)
    if page in LONG_SENTENCES_ALLOWED:
        return
    assert not long, (f"{page}: {len(long)} sentence(s) over {MAX_WORDS} words; split them: "
                      + " | ".join(s[:120] for s in long[:5]))


def test_the_allowed_pages_still_have_long_sentences():
    """A page rewritten under the limit comes off the list, so it stays there."""
    fixed = [page for page, text in pages()
             if page in LONG_SENTENCES_ALLOWED and not long_sentences(text)]
    assert not fixed, f"under {MAX_WORDS} words now, take off the list: {fixed}"


def test_the_sentence_splitter():
    text = ("# Title\n\nOne two three. Four five: six.\n\n- an item\n- another item\n\n"
            "```bash\ntfkfp demo\n```\n| a | b |\n")
    assert sentences(text) == ["Title", "One two three.", "Four five: six.", "- an item",
                                "- another item"]


def test_the_ci_page_s_github_job_runs_the_commands_the_docs_test_runs():
    """The Actions job is YAML (not run here): its steps are the shell block's lines."""
    text = (ROOT / "docs/how-to/ci.md").read_text()
    job = next(m.group(4) for m in FENCE.finditer(text) if m.group(3).strip() == "yaml")
    steps = [line.split("- run: ", 1)[1] for line in job.splitlines() if "- run: " in line]
    shell = [m.group(4) for m in FENCE.finditer(text) if m.group(3).strip() == "bash"]
    assert any([line.strip() for line in block.splitlines()] == steps for block in shell)
