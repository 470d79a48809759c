"""An http.server instance answering on a thread for the length of a block."""

import contextlib
import threading


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
