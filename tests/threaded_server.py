"""An http.server instance answering on a thread for the length of a block, and the base of
the scripted servers tests stand in for an endpoint with."""

import contextlib
import http.server
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
