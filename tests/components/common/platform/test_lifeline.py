"""A child started through common.platform.lifeline dies with its parent, even a SIGKILLed one."""

import os
import signal
import subprocess
import sys

import pytest
from process_tree import alive, descendants, wait_until_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="parent-death signals are Linux's")

# A parent that starts one sleeping child (through lifeline, or plainly for contrast), says
# the child's pid, and waits to be killed.
PARENT = """
import subprocess, sys, time
from tfkfp.components.common.platform import lifeline
start = lifeline.popen if sys.argv[1] == "lifeline" else subprocess.Popen
child = start([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
"""


def kill_parent_of_a_child(how: str):
    """Start PARENT, SIGKILL it once its child runs; the child's pid and start time."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, how], stdout=subprocess.PIPE,
                              text=True)
    try:
        pid = int(parent.stdout.readline())
        child = {pid: descendants(parent.pid)[pid]}
    finally:
        parent.kill()
        parent.wait()
    return child


def test_the_child_dies_when_its_parent_is_sigkilled():
    child = kill_parent_of_a_child("lifeline")
    assert wait_until_gone(child) == []


def test_without_it_the_child_runs_on_which_is_what_the_test_above_would_see():
    child = kill_parent_of_a_child("plain")
    try:
        assert alive(*next(iter(child.items())))
    finally:
        for pid in child:
            os.kill(pid, signal.SIGKILL)


# The preexec_fn is made in one process and used by a forked copy of it: the child's parent is
# then not the one that asked, as when the parent dies between fork and prctl.
RACE = """
import os, subprocess, sys
from tfkfp.components.common.platform import lifeline
in_child = lifeline.die_with_parent()
pid = os.fork()
if pid == 0:
    child = subprocess.Popen([sys.executable, "-c", "print('ran')"], preexec_fn=in_child)
    os._exit(child.wait())
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_child_whose_parent_is_not_the_one_that_asked_exits_before_it_runs():
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == [str(128 + signal.SIGKILL)], done.stderr


def test_it_adds_nothing_where_the_kernel_cannot(monkeypatch):
    from tfkfp.components.common.platform import lifeline

    lifeline._prctl.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert lifeline.die_with_parent() is None
    finally:
        monkeypatch.undo()
        lifeline._prctl.cache_clear()
