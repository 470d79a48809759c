"""The Google Cloud CLI's Pub/Sub emulator on a free loopback port, once per test session,
and small helpers to make topics and subscriptions and to publish and pull through the real
``google-cloud-pubsub`` client.

``gcloud beta emulators pubsub start`` forks a Java server that outlives the wrapper, so it
is started in its own process group (setsid) and stopped as a group. Where gcloud is not
installed the tests that need it skip, saying so.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from typing import Dict, List, Tuple

import pytest
from ports import free_port

PROJECT = "local-project"  # Beam's pattern for project ids accepts it; the emulator any
START_TIMEOUT = 90


class Emulator:
    def __init__(self, folder: str):
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.log = os.path.join(folder, "pubsub-emulator.log")
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(
                ["gcloud", "beta", "emulators", "pubsub", "start", f"--host-port={self.host}",
                 f"--project={PROJECT}", f"--data-dir={folder}"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Pub/Sub emulator exited: {self.tail()}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the Pub/Sub emulator did not listen in {START_TIMEOUT} s: "
                           f"{self.tail()}")

    def tail(self) -> str:
        with open(self.log) as f:
            return f.read()[-2000:]

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="session")
def pubsub_emulator(tmp_path_factory):
    """The emulator, PUBSUB_EMULATOR_HOST pointing at it for the session."""
    if shutil.which("gcloud") is None:
        pytest.skip("the Google Cloud CLI (gcloud) is not installed: no Pub/Sub emulator")
    emulator = Emulator(str(tmp_path_factory.mktemp("pubsub")))
    before = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = emulator.host
    yield emulator
    if before is None:
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    else:
        os.environ["PUBSUB_EMULATOR_HOST"] = before
    emulator.stop()


def topic_with_subscription(name: str) -> Tuple[str, str]:
    """A new topic and a subscription on it: their paths."""
    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(PROJECT, name)
    subscription = subscriber.subscription_path(PROJECT, f"{name}-sub")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=60)
    return topic, subscription


def publish(topic: str, bodies: List[bytes], attributes: Dict[str, str] | None = None
            ) -> List[str]:
    """Publish each body; the message ids."""
    from google.cloud import pubsub_v1

    publisher = pubsub_v1.PublisherClient()
    futures = [publisher.publish(topic, body, **(attributes or {})) for body in bodies]
    return [f.result(timeout=30) for f in futures]


def pull_all(subscription: str, expected: int = 0, timeout: float = 30.0) -> List:
    """Every message the subscription holds (acknowledged), until ``expected`` arrived or
    the subscription stays empty for a few seconds within ``timeout``."""
    from google.cloud import pubsub_v1

    subscriber = pubsub_v1.SubscriberClient()
    found, quiet_since = [], time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (expected and len(found) >= expected):
        answer = subscriber.pull(subscription=subscription, max_messages=500, timeout=5)
        if answer.received_messages:
            found += [m.message for m in answer.received_messages]
            subscriber.acknowledge(subscription=subscription,
                                   ack_ids=[m.ack_id for m in answer.received_messages])
            quiet_since = time.monotonic()
        elif not expected and time.monotonic() - quiet_since > 3:
            break
    return found
