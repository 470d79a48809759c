"""What serving raises: bad options before start, bad requests (400), load shed (503)."""


class ServeOptionsError(ValueError):
    """A serving option out of range or a model that cannot be served; raised before start."""


class PrecomputedError(ServeOptionsError):
    """A precomputed set that cannot be used, naming the file, the line and what is wrong."""


class RequestError(ValueError):
    """A request that does not fit the model: answered 400 with this message, which names the
    field (instance index and column, or v2 input) and what was expected."""


class OverloadedError(RuntimeError):
    """More requests waiting for the model than the bounded queue holds: answered 503."""


class BodyTooLargeError(RequestError):
    """A request body past max_request_bytes (raised while reading it: answered 413)."""


def too_deep() -> RequestError:
    """The answer to a JSON body nested past what a JSON reader recurses into (orjson stops
    at 1024 levels, Python's reader at its recursion limit): a 400, not a RecursionError."""
    return RequestError("the JSON body is nested too deeply to read (about 1,000 levels or "
                        'more); a predict request needs a few: {"instances": [...]} or '
                        '{"inputs": [...]}')
