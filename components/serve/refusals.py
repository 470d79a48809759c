"""What a refused request is told, and what the log gets: REST exception handlers and the
gRPC status of each error, named without server internals (no traceback, no file paths),
one log line per refusal (the traceback only at debug level).

A 4xx answer is logged by the request gate (limits.RequestGate), which sees every answer;
gRPC refusals are logged here. Load shedding (503) is counted in
``tfkfp_requests_shed_total`` rather than logged request by request.
"""

import logging
import re
from typing import Callable, List

from tfkfp.components.serve.errors import (
    BodyTooLargeError,
    OverloadedError,
    RequestError,
    too_deep,
)
from tfkfp.components.serve.limits import printable

log = logging.getLogger("tfkfp.serve")
INTERNAL = "internal server error (the server's log has the details)"
_SCHEMA = "\"b64\" is not a serialized tf.train.Example of the model's schema"


def add_rest_handlers(app) -> None:
    """Our answers for KServe's errors and ours (KServe's own log a traceback each)."""
    from fastapi.responses import ORJSONResponse
    from kserve.errors import (
        InvalidInput,
        ModelNotFound,
        ModelNotReady,
        ServerNotReady,
        UnsupportedProtocol,
    )
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    def answer(status: int, message: Callable = str, headers=None):
        async def handler(_, err: Exception):
            log.debug("refused with %d", status, exc_info=err)
            return ORJSONResponse({"error": message(err)}, status_code=status, headers=headers)
        return handler

    for errors, status in [((RequestError, InvalidInput), 400), ((BodyTooLargeError,), 413),
                           ((ModelNotFound,), 404), ((ModelNotReady, ServerNotReady), 503),
                           ((NotImplementedError, UnsupportedProtocol), 501)]:
        for error in errors:
            app.add_exception_handler(error, answer(status))
    app.add_exception_handler(OverloadedError, answer(503, headers={"Retry-After": "1"}))
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _internal_error)


async def _client_gone(request, err: Exception):
    """A client that left before sending its whole body (or was disconnected for being too
    slow, which the listener logged): nothing to answer, nothing wrong here."""
    from fastapi.responses import Response

    log.debug("client left %s %s before its body was read", request.method,
              printable(request.url.path, 200))
    return Response(status_code=499)


async def _http_error(request, err: Exception):
    """FastAPI's own errors as FastAPI answers them, but for a v2 body it could not read
    because the JSON is nested too deeply (a RecursionError under FastAPI's generic "error
    parsing the body"): that error says so; a client that left: as _client_gone."""
    from fastapi.exception_handlers import http_exception_handler
    from fastapi.responses import ORJSONResponse
    from starlette.requests import ClientDisconnect

    if isinstance(err.__cause__, RecursionError):
        return ORJSONResponse({"error": str(too_deep())}, status_code=400)
    if isinstance(err.__cause__, ClientDisconnect):
        return await _client_gone(request, err.__cause__)
    return await http_exception_handler(request, err)


async def _internal_error(request, err: Exception):
    """A server fault: the traceback to the log, a plain message to the client."""
    from fastapi.responses import ORJSONResponse

    log.error("internal error answering %s %s", request.method,
              printable(request.url.path, 200), exc_info=err)
    return ORJSONResponse({"error": INTERNAL}, status_code=500)


def grpc_status(err: Exception):
    """(status code, details, whether the client is at fault) of an error raised by a gRPC
    method."""
    from grpc import StatusCode
    from grpc_interceptor.exceptions import GrpcException
    from kserve.errors import (
        InvalidInput,
        ModelNotFound,
        ModelNotReady,
        ServerNotReady,
        UnsupportedProtocol,
    )

    if isinstance(err, GrpcException):
        return err.status_code, err.details, True
    table = [((RequestError, InvalidInput), StatusCode.INVALID_ARGUMENT),
             ((ModelNotFound,), StatusCode.NOT_FOUND),
             ((ModelNotReady, ServerNotReady, OverloadedError), StatusCode.UNAVAILABLE),
             ((NotImplementedError, UnsupportedProtocol), StatusCode.UNIMPLEMENTED)]
    for errors, code in table:
        if isinstance(err, errors):
            return code, getattr(err, "reason", None) or str(err), True
    return StatusCode.INTERNAL, INTERNAL, False


def grpc_interceptor():
    """KServe's exception-to-status interceptor with our statuses and log lines."""
    from grpc_interceptor import AsyncExceptionToStatusInterceptor

    class Interceptor(AsyncExceptionToStatusInterceptor):
        async def handle_exception(self, ex, request_or_iterator, context, method_name):
            code, details, refused = grpc_status(ex)
            if refused:
                if code.name != "UNAVAILABLE":
                    log.warning("refused gRPC %s from %s: %s %s", method_name.rsplit("/")[-1],
                                context.peer(), code.name, printable(details, 300))
                log.debug("refused", exc_info=ex)
            else:
                log.error("internal error answering gRPC %s", method_name, exc_info=ex)
            await context.abort(code, details)

    return Interceptor()


def example_refusal(records: List[bytes], parse: Callable, err: Exception) -> RequestError:
    """The first of ``records`` (b64 instances, which ``parse`` refused with ``err``) that
    is not a tf.train.Example of the model's schema, named with a short reason. Only on the
    failure path: prefixes are parsed as the batch was (its first record decides the
    layout), a binary search of about log2(n) calls."""
    from tensorflow.core.example import example_pb2

    good, bad = 0, len(records)  # records[:good] parse, records[:bad] do not
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            parse(records[:middle])
            good = middle
        except Exception as failure:  # noqa: BLE001 - the request's fault, named below
            bad, err = middle, failure
    try:
        example_pb2.Example.FromString(records[bad - 1])
        reason = _tf_reason(err)
    except Exception:  # noqa: BLE001 - any decode failure: not an Example at all
        reason = "not a tf.train.Example protocol buffer"
    return RequestError(f"instance {bad - 1}: {_SCHEMA} ({reason})")


def _tf_reason(err: Exception) -> str:
    """The last paragraph of TensorFlow's message, without the graph's traceback, the node,
    the op or the record's bytes."""
    text = getattr(err, "message", None)
    if not isinstance(text, str):
        return "the parser refused it"
    text = re.sub(r"\s*\[Op:[^\]]*\]\s*$", "", text.split("\n\t [[", 1)[0])
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    reason = paragraphs[-1] if paragraphs else ""
    if reason.startswith("Could not parse example input"):
        return "not a tf.train.Example protocol buffer"
    reason = re.sub(r", Index: \d+", "", re.sub(r"^Name: [^,]*, ", "", reason))
    if not reason or 'File "' in reason or "Traceback" in reason:
        return "the parser refused it"
    return printable(reason, 200)
