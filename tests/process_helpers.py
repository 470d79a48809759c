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


def tf_config_of(pid):
    """The TF_CONFIG a process was started with (Linux /proc), or None."""
    import json

    with open(f"/proc/{pid}/environ", "rb") as f:
        for entry in f.read().split(b"\0"):
            if entry.startswith(b"TF_CONFIG="):
                return json.loads(entry[len(b"TF_CONFIG="):])
    return None


def listening_sockets(pid):
    """{(address, port)} of the TCP sockets a process listens on, from /proc/net/tcp and
    tcp6 and the process's open files; an IPv4-mapped IPv6 address is given as IPv4."""
    import ipaddress

    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            rows = [line.split() for line in f.readlines()[1:]]
        for row in rows:
            local, state, inode = row[1], row[3], row[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            host, port = local.split(":")
            # The kernel prints each 32-bit word of the address in host (little-endian) order.
            raw = b"".join(bytes.fromhex(host[i:i + 8])[::-1] for i in range(0, len(host), 8))
            address = ipaddress.ip_address(raw)
            if address.version == 6 and address.ipv4_mapped:
                address = address.ipv4_mapped
            found.add((str(address), int(port, 16)))
    return found
