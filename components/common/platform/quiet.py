"""TensorFlow imported without its start-up noise on the console.

TensorFlow's C++ start-up lines (its banner, written twice, and on a machine without GPUs
the CUDA probe's error) are written to file descriptor 2 before any log level applies, so
only pointing that descriptor at the null device keeps them off a command's console.
"""

import contextlib
import os
import sys
from typing import Iterator


@contextlib.contextmanager
def native_stderr_hushed() -> Iterator[None]:
    """File descriptor 2 on the null device for the block; Python errors still raise."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def import_tensorflow_quietly() -> None:
    """Import TensorFlow and probe its devices, hushed. Its own Python logging stays at
    WARNING and above (TF_CPP_MIN_LOG_LEVEL, unless the user set it)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with native_stderr_hushed():
        import tensorflow as tf

        tf.config.list_physical_devices()
