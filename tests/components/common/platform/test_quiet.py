"""TensorFlow imported by a command without its C++ start-up lines on the console."""

import subprocess
import sys


def run(code):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}  # no TF_CPP_MIN_LOG_LEVEL of the caller's
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, check=True)


def test_importing_tensorflow_quietly_writes_nothing_to_stderr():
    noisy = run("import tensorflow as tf; tf.config.list_physical_devices()")
    assert "absl::InitializeLog" in noisy.stderr  # what a user would see otherwise
    quiet = run("from tfkfp.components.common.platform.quiet import "
                "import_tensorflow_quietly as q; q(); import sys; print('after', "
                "file=sys.stderr)")
    assert quiet.stderr == "after\n"
