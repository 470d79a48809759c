"""The error bad options, a bad model or a model/data mismatch raise before any output."""

import re


class PredictInputError(ValueError):
    """Bad options, model or data; the message names what was found and what was expected."""


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
