"""An ASGI middleware that refuses request bodies over a size limit with 413."""

import json
from typing import Any, Callable, Dict

from tfkfp.components.serve.errors import BodyTooLargeError


class BodyLimit:
    """Refuse a body over ``limit`` bytes: by its Content-Length before reading it, or, for
    a chunked body, as soon as the bytes read pass the limit."""

    def __init__(self, app: Callable, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(send, int(length))
            return
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise BodyTooLargeError
            return message

        async def tracked_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except BodyTooLargeError:
            if not started:
                await self._refuse(send, seen)

    async def _refuse(self, send: Callable, size: int) -> None:
        body = json.dumps({"error": f"request body of {size} bytes or more is over the limit "
                           f"of {self.limit} bytes (max_request_bytes)"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
