"""The benchmarks' shared command line (the flags each asks for, rows and repeats resolved),
their exit status and the suite's choice of scenarios."""

import pytest

from benchmarks.__main__ import SCENARIOS
from benchmarks.harness import (
    QUICK_REPEATS,
    QUICK_ROWS,
    REPEATS,
    SMOKE_ROWS,
    Record,
    exit_status,
    parse_options,
)


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


def test_smoke_shrinks_a_benchmark_to_one_run_on_a_tiny_table_and_implies_quick():
    smoke = parse_options("bench", ["--smoke"], "help", rows=100_000, kept="best is kept")
    assert (smoke.rows, smoke.repeats, smoke.quick, smoke.smoke) == (SMOKE_ROWS, 1, True, True)
    given = parse_options("bench", ["--smoke", "--rows", "7"], "help", rows=100_000)
    assert given.rows == 7
    assert parse_options("bench", [], "help").smoke is False


def test_a_smoke_run_exits_0_whatever_its_figures_and_a_real_one_1_on_a_missed_target(capsys):
    missed = [Record("s", "rows/s", 1.0, "anchor", 2.0, 0.9, 0.0)]
    assert exit_status(missed) == 1
    assert exit_status(missed, smoke=True) == 0
    assert "smoke run" in capsys.readouterr().out
    assert exit_status([Record("s", "rows/s", 2.0, "anchor", 2.0, 0.9, 0.0)]) == 0


@pytest.mark.parametrize("argv, names", [
    ([], [n for n in SCENARIOS if n != "edge_quantizer"]),
    (["--skip", "workers", "endpoint"],
     [n for n in SCENARIOS if n not in ("edge_quantizer", "workers", "endpoint")]),
    (["--only", "edge_quantizer"], ["edge_quantizer"]),
])
def test_the_suite_runs_its_registered_scenarios_in_order_less_those_left_out(argv, names):
    from benchmarks.__main__ import chosen, parse_args

    assert chosen(parse_args(argv)) == names
    assert names[:2] in (["sharding", "reading"], ["edge_quantizer"])


def test_a_scenario_whose_package_is_missing_stops_the_suite_before_any_work(monkeypatch,
                                                                              capsys):
    import benchmarks.__main__ as suite

    monkeypatch.setattr(suite, "NEEDS", {"reading": ("no_such_module_here", "some-package")})
    monkeypatch.setattr(suite.data, "write_table", lambda *a: pytest.fail("work began"))
    assert suite.main(["--only", "reading"]) == 2
    assert capsys.readouterr().err == (
        "python -m benchmarks: reading needs some-package (pip install some-package); or "
        "leave it out with --skip\n")
    assert suite.lacking(["sharding", "reading"]) == suite.lacking(["reading"])
