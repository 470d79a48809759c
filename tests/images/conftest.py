"""Fixtures of the image tests (the tools themselves: tests/cluster_tools.py)."""

import pytest
from cluster_tools import namespace


@pytest.fixture(scope="session")
def tools():
    """``tools.tool(name)``, ``tools.run(args)``, ``tools.missing(reason)`` and the paths."""
    return namespace()
