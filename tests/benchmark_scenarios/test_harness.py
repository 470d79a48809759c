"""The benchmarks' shared command line: the flags each asks for, rows and repeats resolved."""

import pytest

from benchmarks.harness import QUICK_REPEATS, QUICK_ROWS, REPEATS, parse_options


def test_a_sized_repeated_benchmark_resolves_rows_and_repeats_from_quick():
    full = parse_options("bench", [], "help", rows=100_000, kept="best is kept")
    quick = parse_options("bench", ["--quick"], "help", rows=100_000, kept="best is kept")
    given = parse_options("bench", ["--quick", "--rows", "7", "--repeats", "5"], "help",
                          rows=100_000, kept="best is kept")
    assert (full.rows, full.repeats, full.quick) == (100_000, REPEATS, False)
    assert (quick.rows, quick.repeats, quick.quick) == (QUICK_ROWS, QUICK_REPEATS, True)
    assert (given.rows, given.repeats) == (7, 5)


def test_a_benchmark_gets_only_the_flags_it_asks_for(capsys):
    args = parse_options("bench", ["--json", "out.json", "--only", "x"], "help", json=True,
                         more=lambda parser: parser.add_argument("--only"))
    assert (args.json, args.only, args.quick) == ("out.json", "x", False)
    for flag in ("--rows", "--repeats", "--json"):
        with pytest.raises(SystemExit):
            parse_options("bench", [flag, "3"], "help")
        assert f"unrecognized arguments: {flag}" in capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["--quick", "--only", "endpoint"],
     {"rows": QUICK_ROWS, "repeats": QUICK_REPEATS, "only": "endpoint", "json": None}),
    (["--rows", "5000"], {"rows": 5000, "repeats": REPEATS, "quick": False}),
])
def test_the_suite_s_command_line_resolves_as_its_flags_say(argv, expected):
    from benchmarks.__main__ import parse_args

    args = parse_args(argv)
    assert {k: getattr(args, k) for k in expected} == expected
