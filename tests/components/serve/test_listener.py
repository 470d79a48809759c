"""The REST listener without a model: the port taken before anything loads, and uvicorn's
HTTP protocols (httptools' and h11's) with read deadlines, on a real uvicorn server on
loopback around a small ASGI app."""

import contextlib
import socket
import threading
import time

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.listener import bind, timed_protocol

HEADERS_S, READ_S = 0.5, 1.5
SLACK_S = 5.0  # two busy cores: how late a deadline may be seen
HALF_HEADER = b"POST /v1/models/model:predict HTTP/1.1\r\nHost: x\r\nContent-Ty"
BASES = [HttpToolsProtocol, H11Protocol]


def request(body: bytes = b"{}", length: int | None = None) -> bytes:
    return (b"POST /v1/models/model:predict HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (len(body) if length is None else length)) + body


async def echo(scope, receive, send):
    """Reads the whole body, answers its length; a client that left is recorded."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            echo.gone += 1
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def serving(base):
    """uvicorn on a free loopback port with the timed ``base`` protocol, in a thread."""
    echo.gone = 0
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(echo, http=timed_protocol(base, HEADERS_S, READ_S),
                                           lifespan="off", log_config=None, loop="asyncio"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)


def until_closed(conn: socket.socket, within: float) -> bytes:
    """What the server sends until it closes the connection (fails after ``within`` s)."""
    conn.settimeout(within)
    received = b""
    while chunk := conn.recv(4096):
        received += chunk
    return received


def answer(conn: socket.socket) -> bytes:
    """One whole answer of echo's (its body is under 10 bytes)."""
    conn.settimeout(SLACK_S)
    received = b""
    while not (b"\r\n\r\n" in received and received.split(b"\r\n\r\n", 1)[1]):
        received += conn.recv(4096)
    return received


def test_a_port_in_use_is_named_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServeOptionsError) as caught:
            bind("127.0.0.1", port)
    assert str(caught.value).startswith(f"port {port} on 127.0.0.1 is already in use")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.__name__)
def test_clients_sending_half_a_header_or_nothing_are_answered_408_and_closed(base):
    with serving(base) as port:
        conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        for conn in conns[:40]:  # the last ten send nothing at all
            conn.sendall(HALF_HEADER)
        sent = time.monotonic()
        try:
            answers = [until_closed(conn, HEADERS_S + SLACK_S) for conn in conns]
        finally:
            for conn in conns:
                conn.close()
        took = time.monotonic() - sent
        assert all(a.startswith(b"HTTP/1.1 408 ") and b"request headers not received in "
                   b"full within 0.5 s" in a for a in answers), answers[0]
        assert took <= HEADERS_S + SLACK_S
        with socket.create_connection(("127.0.0.1", port)) as conn:  # and it goes on
            conn.sendall(request(b"abc"))
            assert answer(conn).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.__name__)
def test_a_body_not_sent_in_full_is_answered_408_and_the_app_sees_the_client_leave(base):
    with serving(base) as port, socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(request(b'{"instances": [', length=100))
        started = time.monotonic()
        answer = until_closed(conn, READ_S + SLACK_S)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"request body not received" in answer
        assert HEADERS_S < time.monotonic() - started <= READ_S + SLACK_S
        deadline = time.monotonic() + SLACK_S
        while not echo.gone and time.monotonic() < deadline:
            time.sleep(0.01)
        assert echo.gone == 1


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.__name__)
def test_a_slow_request_within_its_deadlines_and_an_idle_keep_alive_are_served(base):
    """The deadlines count from a request's first byte: idle time before it is uvicorn's
    keep-alive (5 s here), and the next request, begun and left half sent, gets its own."""
    with serving(base) as port, socket.create_connection(("127.0.0.1", port)) as conn:
        whole = request(b"x" * 10)
        for at in range(0, len(whole), 20):  # the request in pieces, within the deadlines
            conn.sendall(whole[at:at + 20])
            time.sleep(HEADERS_S / 20)
        assert answer(conn).startswith(b"HTTP/1.1 200 ")
        time.sleep(2 * HEADERS_S)  # idle between requests: uvicorn's keep-alive, not ours
        conn.sendall(request(b"abcd"))
        assert answer(conn).endswith(b"\r\n\r\n4")
        conn.sendall(HALF_HEADER)
        started = time.monotonic()
        assert until_closed(conn, HEADERS_S + SLACK_S).startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - started < 5  # not by the keep-alive timeout
