"""The error bad options, a bad model or a model/data mismatch raise before any output."""

import contextlib
import re
from typing import Iterator


class PredictInputError(ValueError):
    """Bad options, model or data; the message names what was found and what was expected."""


class EndpointError(RuntimeError):
    """Endpoint mode: the endpoint cannot answer this run's rows (retries spent, 401, 403,
    404, an answer of another shape); the message names the URL and why."""


class RowsRefused(Exception):
    """Endpoint mode: the server refused the rows of one request (400, 413, 422, 500); the
    message is the server's."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status


@contextlib.contextmanager
def model_errors() -> Iterator[None]:
    """The shared model runtime's refusals (common.model's ModelInputError: a model that
    does not load, or does not fit the data, the top_k or its outputs) raised as batch
    prediction's own, with the same message and cause."""
    # the model runtime (NumPy) is imported here, so that options checks stay light
    from tfkfp.components.common.model.predictor import ModelInputError

    try:
        yield
    except ModelInputError as err:
        raise PredictInputError(str(err)) from err.__cause__


_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s*\[\[\{\{node [^}]*\}\}\]\]")
_OP = re.compile(r"\s*\[Op:[^\]]*\].*$", re.S)
# a graph's error starts with where the op was defined: the user needs the reason, not that
_DEFINED = re.compile(r"Graph execution error:\s*Detected at node \S+ defined at \(most recent "
                      r"call last\):\s*(?:File [^\n]*\n\s*)*")


def clean_tf_message(err: BaseException) -> str:
    """A TensorFlow error's message without the function-node prefix and the [Op:...] tail."""
    text = getattr(err, "message", None) or str(err)
    text = _OP.sub("", _NODE.sub("", _DEFINED.sub("", text))).strip()
    return " ".join(text.split()) or type(err).__name__
