"""Where a training cluster runs: ``local`` processes on this machine, a Kubeflow Training
Operator ``tfjob``, a Kubeflow Trainer v2 ``trainjob``, or a Vertex AI CustomJob (``vertex``).
All render one ClusterShape (see ../shape.py); tfjob and trainjob share kube.py."""

import contextlib
import signal
import threading
from typing import Iterable, Iterator

TAIL_LINES = 40  # log lines of the replicas kept for a failure's message


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """KFP cancels a step with SIGTERM: inside this block it raises SystemExit, so launchers
    stop what they started; the previous handler comes back after. A no-op off the main
    thread, where signal handlers cannot be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(f"training stopped by signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def indented(lines: Iterable[str]) -> str:
    return "\n".join(f"  {line}" for line in lines)
