"""stream_predict's own errors."""


class StreamInputError(ValueError):
    """A stream request that cannot work: a setting, a topic or a subscription; the message
    names it and what is allowed."""
