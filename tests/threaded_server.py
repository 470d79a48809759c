"""An http.server instance answering on a thread for the length of a block, and the base of
the scripted servers tests stand in for an endpoint with; ``send_json``, their JSON answer."""

import contextlib
import http.server
import json
import threading


class LoopbackServer(http.server.ThreadingHTTPServer):
    """An HTTP server on a free loopback port, a thread per request."""

    daemon_threads = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 (connections kept alive, as the clients under test keep them), no access log."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


JSON_UTF8 = "application/json; charset=UTF-8"  # the Content-Type Google's APIs answer with


def send_json(handler: http.server.BaseHTTPRequestHandler, status: int, body,
              headers: dict | None = None) -> None:
    """Answer ``handler``'s request with ``body`` as JSON: Content-Type application/json and
    Content-Length, then ``headers`` (which may replace either)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)),
                        **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def answering(server):
    """Serve ``server`` on a daemon thread; shut it down and close it when the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
