"""Free loopback ports for the servers the tests start (nobody listens on them now; another
engineer's server may use the defaults)."""

import socket
from typing import List


def free_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(count: int) -> List[int]:
    """``count`` distinct loopback ports nobody listens on (held together while picked)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
