"""The error bad options, a bad model or a model/data mismatch raise before any output."""

import contextlib
import re
from typing import Iterator

# Endpoint mode's errors are common.endpoint's, raised by its client and protocols
from tfkfp.components.common.endpoint.errors import (  # noqa: F401 - batch_predict's names
    EndpointError,
    EndpointInputError,
    RowsRefused,
)


class PredictInputError(ValueError):
    """Bad options, model or data; the message names what was found and what was expected."""


@contextlib.contextmanager
def endpoint_errors() -> Iterator[None]:
    """Endpoint mode's refusals before any work (common.endpoint's EndpointInputError: bad
    endpoint settings, an endpoint that cannot be used) raised as batch prediction's own."""
    try:
        yield
    except EndpointInputError as err:
        raise PredictInputError(str(err)) from err.__cause__


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
