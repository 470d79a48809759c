"""The REST listening socket, bound before the model loads, and uvicorn's HTTP protocol with
read deadlines.

uvicorn binds its port only once serving starts (here: after the model has begun loading)
and then reports a port in use in several log lines; ``bind`` takes the port first and says
so in one line. uvicorn also has no header or body timeout: ``timeout_keep_alive`` closes an
idle connection only after a response, so a client that connects and sends half a header
(or a Content-Length and part of the body) holds its connection and an ASGI task forever.
``timed_protocol`` gives each request a deadline for its headers and one for the whole
request, counted from its first byte (from connecting, for the first request); past either
the client is answered 408 (when no answer has started) and disconnected.
"""

import asyncio
import json
import logging
import socket
from typing import Type

from tfkfp.components.serve.errors import ServeOptionsError

log = logging.getLogger("tfkfp.serve")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening; uvicorn listens on it), or
    ServeOptionsError naming the address and what is wrong."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart
    try:  # finds the port in TIME_WAIT, not taken
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise ServeOptionsError(_bind_error(host, port, err)) from None
    return sock


def _bind_error(host: str, port: int, err: OSError) -> str:
    import errno

    if err.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another server is listening "
                "there): stop it or choose another port with --port")
    if err.errno == errno.EACCES:
        return f"port {port} on {host}: permission denied (ports below 1024 need root)"
    return f"cannot listen on {host}:{port}: {err.strerror or err}"


def timed_protocol(base: Type[asyncio.Protocol], header_seconds: float,
                   read_seconds: float) -> Type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` (httptools' or h11's) with read deadlines: a
    request's headers within ``header_seconds`` and the whole request within
    ``read_seconds`` of its first byte."""

    class TimedProtocol(base):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._deadline = None
            self._start_request()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
                self._start_request()  # the first byte of the next request
            super().data_received(data)
            self._read_progress()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _start_request(self) -> None:
            self._started, self._before = self.loop.time(), self.cycle
            self._arm(header_seconds)

        def _read_progress(self) -> None:
            """Past the headers: the rest of the whole request's time; read in full: none."""
            if self._deadline is None or self.cycle is self._before:
                return
            self._disarm()
            if self.cycle.more_body:
                self._arm(self._started + read_seconds - self.loop.time())

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(max(seconds, 0.0), self._expired)

        def _disarm(self) -> None:
            if getattr(self, "_deadline", None) is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            headers = self.cycle is self._before
            what, seconds = ("headers", header_seconds) if headers else \
                ("body", read_seconds)
            error = (f"request {what} not received in full within {seconds:g} s "
                     "(a client must send its whole request promptly)")
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
            log.warning("refused connection from %s: 408 %s", client, error)
            if headers or not self.cycle.response_started:
                self.transport.write(_timeout_answer(error))
            self.transport.close()

    TimedProtocol.__name__ = TimedProtocol.__qualname__ = f"Timed{base.__name__}"
    return TimedProtocol


def _timeout_answer(error: str) -> bytes:
    body = json.dumps({"error": error}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)) + body
