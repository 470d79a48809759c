"""An ASGI middleware in front of the app: refuses a body over the size limit (413) or of a
type that is not JSON (415), hands a form-encoded or untyped body on as JSON, and logs one
line for every request answered 4xx."""

import json
import logging
from typing import Any, Callable, Dict

from tfkfp.components.serve.errors import BodyTooLargeError

log = logging.getLogger("tfkfp.serve")
WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# JSON, and form-encoded because `curl -d` sends it (TF Serving's own examples do so); no
# type at all is read as JSON too. A binary v2 body (application/octet-stream) is taken only
# with the Inference-Header-Content-Length header of the binary tensor extension.
AS_JSON = frozenset({b"", b"application/x-www-form-urlencoded"})
ACCEPTED = AS_JSON | {b"application/json"}
BINARY_V2 = b"inference-header-content-length"
JSON_TYPE = (b"content-type", b"application/json")


class RequestGate:
    """Refuse, before the app reads it, a body over ``limit`` bytes (by its Content-Length,
    or for a chunked body as soon as the bytes read pass the limit, whatever the app then
    tries to answer) or a POST whose Content-Type is not JSON; log each 4xx answer in one
    line (method, path, client, status and the error's text)."""

    def __init__(self, app: Callable, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(scope, send, 413, _too_large(int(length), self.limit))
            return
        if scope["method"] in WITH_BODY and not _accepted(headers):
            await self._refuse(scope, send, 415, _unsupported(headers[b"content-type"]))
            return
        if scope["method"] in WITH_BODY and _read_as_json(headers):
            scope = _typed_as_json(scope)
        seen = 0
        state = {"status": 0, "over": False, "replaced": False, "logged": False,
                 "gone": False}

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.disconnect":  # no one is left to answer or log
                state["gone"] = True
            seen += len(message.get("body", b""))
            if seen > self.limit:
                state["over"] = True
                raise BodyTooLargeError(_too_large(seen, self.limit))
            return message

        async def tracked_send(message):
            if state["replaced"]:
                return
            if message["type"] == "http.response.start":
                if state["over"]:  # however the app answered the exception: 413
                    state["replaced"] = True
                    await self._refuse(scope, send, 413, _too_large(seen, self.limit))
                    return
                state["status"] = message["status"]
            elif 400 <= state["status"] < 500 and not (state["logged"] or state["gone"]):
                # its first body
                state["logged"] = True
                refused(scope, state["status"], _error_text(message.get("body", b"")))
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except BodyTooLargeError:
            if not state["status"] and not state["replaced"]:
                await self._refuse(scope, send, 413, _too_large(seen, self.limit))

    @staticmethod
    async def _refuse(scope: Dict[str, Any], send: Callable, status: int, error: str) -> None:
        refused(scope, status, error)
        body = json.dumps({"error": error}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def refused(scope: Dict[str, Any], status: int, error: str) -> None:
    """The one log line of a refused request (client text made printable and cut short)."""
    client = scope.get("client")
    log.warning("refused %s %s from %s: %d %s", scope.get("method", ""),
                printable(scope.get("path", ""), 200),
                f"{client[0]}:{client[1]}" if client else "?", status, printable(error, 300))


def printable(text: str, most: int) -> str:
    text = " ".join(str(text).split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= most else text[:most] + "..."


def _accepted(headers: Dict[bytes, bytes]) -> bool:
    kind = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    if kind in ACCEPTED or (kind.startswith(b"application/") and kind.endswith(b"+json")):
        return True
    return kind == b"application/octet-stream" and BINARY_V2 in headers


def _read_as_json(headers: Dict[bytes, bytes]) -> bool:
    """A form-encoded or untyped body, not the binary tensor extension's: read as JSON,
    by KServe's v1 and v2 alike (FastAPI would hand a v2 one on as binary)."""
    kind = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    return kind in AS_JSON and BINARY_V2 not in headers


def _typed_as_json(scope: Dict[str, Any]) -> Dict[str, Any]:
    kept = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
    return {**scope, "headers": [*kept, JSON_TYPE]}


def _too_large(size: int, limit: int) -> str:
    return (f"request body of {size} bytes or more is over the limit of {limit} bytes "
            "(max_request_bytes)")


def _unsupported(kind: bytes) -> str:
    return (f"Content-Type {kind.decode('latin-1')[:100]!r} is not accepted: send JSON "
            "(application/json)")


def _error_text(body: bytes) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace")
    if isinstance(parsed, dict):
        return str(parsed.get("error", parsed.get("detail", parsed)))
    return str(parsed)
