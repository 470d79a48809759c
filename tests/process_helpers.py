"""Run train() in a child process and kill it, or one of its tasks, like a preempted pod."""

import os
import signal
import subprocess
import sys
import time

RUN_TRAIN = """
import json, sys
from tfkfp.components.train.core import train
options = json.loads(sys.argv[3])
result = train(sys.argv[1], sys.argv[2], **options)
print("RESULT " + json.dumps(result.figures))
"""


def start_training(data, model_dir, **options):
    """train() in a child process, so a test can kill it like a preempted pod."""
    import json

    return subprocess.Popen([sys.executable, "-c", RUN_TRAIN, data, model_dir,
                             json.dumps(options)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path, process, timeout=300):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if process.poll() is not None:
            raise AssertionError(f"training ended before {path} appeared:\n"
                                 f"{process.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"{path} did not appear in {timeout} s")
        time.sleep(0.05)


def pids_with_tf_config(task_type, index):
    """Processes whose TF_CONFIG names this task (Linux /proc)."""
    needle = f'"task": {{"type": "{task_type}", "index": {index}}}'.encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def kill(pid):
    os.kill(pid, signal.SIGKILL)
