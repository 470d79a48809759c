"""Keeps the local cluster's TensorFlow servers on loopback.

TensorFlow's gRPC server binds ``0.0.0.0:<port>`` whatever the cluster spec says
(``GrpcServer::Init``): no ``TF_CONFIG``, ``ServerDef`` or gRPC setting chooses the address.
Those servers run any graph sent to them, unauthenticated, so the local launcher preloads
``bind_loopback.c`` into its task processes, which turns a bind to the wildcard address into
one to 127.0.0.1. Cluster launchers (tfjob, trainjob, vertex) do not: their replicas must be
reached on the pod network, which the NetworkPolicy in manifests/base fences instead."""

import logging
import os
import shutil
import subprocess
from typing import Dict

log = logging.getLogger("tfkfp")

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bind_loopback.c")
# A prebuilt library (e.g. built into an image without a C compiler) instead of building one.
LIBRARY_ENV = "TFKFP_BIND_LOOPBACK_LIBRARY"


def build(folder: str) -> str | None:
    """The shim compiled into ``folder`` (private to this run, so no other user can swap it),
    or the prebuilt one that ``TFKFP_BIND_LOOPBACK_LIBRARY`` names; None, with a warning
    saying what is exposed, when neither is possible."""
    prebuilt = os.environ.get(LIBRARY_ENV)
    if prebuilt:
        if not os.path.isfile(prebuilt):
            raise FileNotFoundError(f"{LIBRARY_ENV}={prebuilt!r} is not a file; unset it or "
                                    f"build {os.path.basename(SOURCE)} there")
        return prebuilt
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    why = "no C compiler (cc, gcc or clang) is on PATH"
    if compiler:
        target = os.path.join(folder, "bind_loopback.so")
        done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", target, SOURCE,
                               "-ldl"], capture_output=True, text=True)
        if done.returncode == 0:
            return target
        why = f"{compiler} could not build {SOURCE}: {done.stderr.strip()[-500:]}"
    log.warning("the local cluster's TensorFlow servers will listen on every network "
                "interface, not only 127.0.0.1, because %s; set %s to a built "
                "bind_loopback.so to keep them on loopback", why, LIBRARY_ENV)
    return None


def environment(library: str | None) -> Dict[str, str]:
    """What a task process's environment adds to preload the shim (nothing without one)."""
    if not library:
        return {}
    preload = os.environ.get("LD_PRELOAD", "")
    return {"LD_PRELOAD": f"{library}:{preload}" if preload else library}
