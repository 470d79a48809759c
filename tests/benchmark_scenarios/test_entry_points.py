"""Every benchmark entry point runs end to end as a user types it, in its smoke mode (tiny
tables, one run of each step, seconds to a minute or two), so that a change in a record
layout, a bundle's inputs or a function's signature that breaks one fails here, not in the
next full run. The figures of a smoke run mean nothing and are not judged."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks.__main__ import OPT_IN, SCENARIOS

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDS = "scenario                metric"  # print_records' header
# scenarios with an entry point of their own (run below), and edge_table (its own test)
APART = ("bottleneck", "endpoint", "workers", "edge_table")
ENTRY_POINTS = {  # module -> what its output must hold
    "benchmarks.serving": "32 clients: QPS",
    "benchmarks.endpoint": RECORDS,
    "benchmarks.workers": RECORDS,
    "benchmarks.bottleneck": RECORDS,
    "benchmarks.scale": RECORDS,
}


def smoke(module: str, *args: str) -> str:
    """``python -m MODULE --smoke ARGS`` from the repository root: its output, once it has
    exited 0."""
    done = subprocess.run([sys.executable, "-m", module, "--smoke", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, f"{module} exited {done.returncode}:\n{done.stderr[-4000:]}"
    return done.stdout


def test_the_suite_runs_each_of_its_scenarios():
    out = smoke("benchmarks", "--skip", *APART)
    for name in SCENARIOS:
        ran = any(line.startswith(f"{name}: ") and line.endswith(" s")
                  for line in out.splitlines())
        assert ran == (name not in APART and name not in OPT_IN), (name, out[-3000:])
    assert RECORDS in out and "(smoke run: every step ran" in out


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="edge_table reads scikit-learn's breast-cancer table; scikit-learn "
                    "is not installed (it is not in tfkfp[dev])")
def test_the_suite_runs_edge_table():
    out = smoke("benchmarks", "--only", "edge_table")
    assert "edge_table_int8" in out


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_each_entry_point_runs_end_to_end(module):
    assert ENTRY_POINTS[module] in smoke(module)
