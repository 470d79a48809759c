"""A long-running operation of Google's API clients that has already finished: what the fakes
of Vertex AI's services return (in a test, and in tests/fake_vertex/sitecustomize.py, which
imports this module from its own folder)."""


class Done:
    """A long-running operation that has finished with ``value``."""

    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value
