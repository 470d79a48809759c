"""What calling a serving endpoint can raise: options or an endpoint that cannot be used
(before any row is sent), an endpoint that cannot answer, and rows a server refused."""


class EndpointInputError(ValueError):
    """Endpoint options that cannot work, or an endpoint that cannot be used (unreachable,
    model not ready, credentials that give no token); the message names the setting or URL.
    A step raises it as its own input error."""


class EndpointError(RuntimeError):
    """The endpoint cannot answer the rows (retries spent, 401, 403, 404, an answer of
    another shape); the message names the URL and why."""


class RowsRefused(Exception):
    """The server refused the rows of one request (400, 413, 422, 500); the message is the
    server's."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
