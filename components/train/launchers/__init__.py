"""Where a training cluster runs: ``local`` processes on this machine, a Kubeflow ``tfjob``,
or a Vertex AI CustomJob (``vertex``). All render one ClusterShape (see ../shape.py)."""

import signal
import threading


def raise_on_sigterm():
    """KFP cancels a step with SIGTERM: turn it into SystemExit so launchers stop what they
    started. Returns the previous handler to restore (None off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum, frame):
        raise SystemExit(f"training stopped by signal {signum}")

    return signal.signal(signal.SIGTERM, stop)
