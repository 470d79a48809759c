"""What the Kubernetes launchers (tfjob, trainjob) share: create a training job (a custom
resource) with the ``kubernetes`` client, follow its conditions and stream its pods' logs with
each replica's name as prefix, fail with the job's reason when it fails or outlives its
deadline, and delete it when the step is cancelled (SIGTERM) or stopped. Each launcher only
renders its job and says, in a JobKind, how to read it.

The replicas run as ``tfkfp-replica``, an account with no API rights and no mounted token.
Their image and service account must be in the namespace's allow-list (the ``tfkfp-config``
ConfigMap, manifests/base): ``launcher_options`` may pick only what the cluster's admin
listed, since the runner account may create jobs that run anything as anyone."""

import collections
import dataclasses
import logging
import threading
import uuid
from typing import Any, Callable, Deque, Dict, Tuple, Type

from tfkfp.components._image import step_image
from tfkfp.components.common.platform import allowlist
from tfkfp.components.common.platform.follow import follow
from tfkfp.components.common.platform.kube_api import (
    api_client,
    api_message,
    default_namespace,
    undoing,
)
from tfkfp.components.common.platform.signals import sigterm_raises
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.train.errors import (
    ClusterCreateRefused,
    ClusterJobFailed,
    ClusterJobReportedFailure,
)
from tfkfp.components.train.launchers.spec import LaunchOptions
from tfkfp.components.train.launchers.tail import TAIL_LINES, indented

log = logging.getLogger("tfkfp")

DEFAULT_SERVICE_ACCOUNT = "tfkfp-replica"  # manifests/base/serviceaccount.yaml
# The allow-list of the replicas' images and service accounts (manifests/base/tfkfp-config.yaml):
# launcher_options field -> the ConfigMap key that lists its allowed values, one a line.
ALLOWLIST = allowlist.CONFIG_MAP
ALLOWLIST_KEYS = {"image": "replicaImages", "service_account": "replicaServiceAccounts"}
# The controller enforces the job's activeDeadlineSeconds; the launcher gives it that much
# longer to say so before deleting the job itself.
DEADLINE_GRACE_SECONDS = 60
LABELS = {"app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "train"}
# Every replica's container: non-root, no privilege escalation, no capabilities.
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"}}


@dataclasses.dataclass(frozen=True)
class JobKind:
    """One kind of training job: its resource, its conditions, its pods."""

    kind: str  # e.g. TFJob
    group: str
    version: str
    plural: str
    succeeded: str  # the condition type that means success; "Failed" means failure
    container: str  # the training container of each pod (whose log is streamed)
    pod_label: str  # the label naming the job on its pods
    install_hint: str  # what to check when the job cannot be created
    failed: Type[ClusterJobFailed]
    reported: Type[ClusterJobReportedFailure]


def default_job_name() -> str:
    return f"tfkfp-train-{uuid.uuid4().hex[:8]}"


def replica_values(options: LaunchOptions) -> Dict[str, str]:
    """The replicas' image and service account, by launcher_options field."""
    return {"image": options.image,
            "service_account": options.service_account or DEFAULT_SERVICE_ACCOUNT}


def replica_allowlist() -> allowlist.AllowList:
    """What launcher_options may pick for the replicas (common/platform/allowlist.py);
    without the ConfigMap only this step's image and tfkfp-replica."""
    return allowlist.AllowList(
        "launcher_options", "the replicas'", ALLOWLIST_KEYS,
        {"image": [step_image()], "service_account": [DEFAULT_SERVICE_ACCOUNT]},
        TrainConfigError)


def check_allowed(options: LaunchOptions, api=None) -> None:
    """Refuse, before anything is staged or created, an image or service account that the
    namespace's allow-list does not name."""
    allowlist.check_allowed(replica_allowlist(), replica_values(options),
                            options.namespace or default_namespace(), api)


def run(kind: JobKind, body: Dict[str, Any], options: LaunchOptions,
        replica_of: Callable[[Any], str], summary: str, api=None) -> None:
    """Create the job and return when it succeeds; raise ``kind.failed`` when it fails or
    passes its deadline. The job is deleted if this returns by any exception but a failure
    its controller reported (that job stays, for ``kubectl describe``, until its TTL).
    ``replica_of(pod)`` names a pod's replica in the log prefixes."""
    from kubernetes import client

    api = api or api_client()
    jobs = client.CustomObjectsApi(api)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    logs = PodLogs(client.CoreV1Api(api), namespace, f"{kind.pod_label}={name}",
                   kind.container, replica_of)
    with sigterm_raises("training"):  # before creating, so a cancel never leaves the job behind
        try:
            _create(kind, jobs, body, summary)
            _follow(kind, jobs, namespace, name, options, logs)
        except ClusterJobReportedFailure:
            raise  # kept for inspection
        except BaseException as err:  # deadline, cancel (even mid-create), lost API: delete,
            if not isinstance(err.__cause__, ClusterCreateRefused):  # unless the server made no job
                _delete(kind, jobs, namespace, name)
            raise
        finally:
            logs.stop()


def _create(kind: JobKind, jobs, body: Dict[str, Any], summary: str) -> None:
    """Create the job. A refused create is marked (its cause is ClusterCreateRefused), so the caller
    deletes nothing (a namesake must stay); anything else, a cancel while the request is in
    flight included, makes the caller delete the job the server may have made already."""
    from kubernetes import client

    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        jobs.create_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, body)
    except client.ApiException as err:
        failure = kind.failed(f"could not create {kind.kind} {namespace}/{name}: {err.status} "
                              f"{err.reason}: {api_message(err)}. {kind.install_hint}")
        raise failure from ClusterCreateRefused(err)
    log.info("created %s %s/%s: %s", kind.kind, namespace, name, summary)


def _follow(kind: JobKind, jobs, namespace: str, name: str, options: LaunchOptions,
            logs: "PodLogs") -> None:
    """Poll the job until it succeeds; raise when it fails or outlives its deadline (reading
    its status survives the API's hiccups: common/platform/follow.py)."""
    seen = None  # the type of the newest condition logged

    def observe(status: Dict[str, Any]) -> None:
        nonlocal seen
        condition = latest_condition(status, (kind.succeeded, "Failed"))
        if condition and condition["type"] != seen:
            seen = condition["type"]
            log.info("%s %s/%s: %s %s", kind.kind, namespace, name, seen,
                     condition.get("message", ""))
        logs.follow_new_pods()
        if seen == "Failed":
            reason = condition.get("reason") or "Failed"
            raise kind.reported(f"{kind.kind} {namespace}/{name} failed: {reason}: "
                                f"{condition.get('message', '')}{logs.tail()}")

    def expired(status) -> BaseException:
        return kind.failed(
            f"{kind.kind} {namespace}/{name} passed its deadline of "
            f"{options.deadline_seconds} s (launcher_options deadline_seconds) without "
            f"finishing; deleted it{logs.tail()}")

    follow(f"{kind.kind} {namespace}/{name}",
           lambda: jobs.get_namespaced_custom_object(kind.group, kind.version, namespace,
                                                     kind.plural, name).get("status") or {},
           lambda status: seen == kind.succeeded,
           interval=options.poll_seconds,
           deadline=options.deadline_seconds + DEADLINE_GRACE_SECONDS,
           observe=observe, expired=expired,
           describe=lambda status: seen or "no condition yet")


def latest_condition(status: Dict[str, Any], ended: Tuple[str, ...]) -> Dict[str, Any] | None:
    """The newest true condition, an ending one (success or failure) first."""
    true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
    final = [c for c in true if c.get("type") in ended]
    return (final or true or [None])[-1]


def _delete(kind: JobKind, jobs, namespace: str, name: str) -> None:
    with undoing(f"delete {kind.kind} {namespace}/{name}", log):
        # Background: the API removes the job now and the garbage collector its pods.
        jobs.delete_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name,
                                             propagation_policy="Background")
        log.info("deleted %s %s/%s", kind.kind, namespace, name)


class PodLogs:
    """Streams the job's pods' logs, each line prefixed with its replica, and keeps a tail for
    error messages. Log streaming is best effort: it never fails the step."""

    def __init__(self, core, namespace: str, selector: str, container: str,
                 replica_of: Callable[[Any], str]):
        self.core, self.namespace, self.selector = core, namespace, selector
        self.container, self.replica_of = container, replica_of
        self.followed: set = set()
        self.lines: Deque[str] = collections.deque(maxlen=TAIL_LINES)  # all pods' threads
        self.stopped = threading.Event()

    def follow_new_pods(self) -> None:
        try:
            pods = self.core.list_namespaced_pod(self.namespace,
                                                 label_selector=self.selector).items
        except Exception as err:  # noqa: BLE001 - logs are best effort
            log.debug("cannot list the job's pods: %s", err)
            return
        for pod in pods:
            key = (pod.metadata.name, pod.metadata.uid)
            if key in self.followed or pod.status.phase not in ("Running", "Succeeded",
                                                                "Failed"):
                continue
            self.followed.add(key)
            threading.Thread(target=self._pump, args=(pod.metadata.name, self._prefix(pod)),
                             daemon=True).start()

    def _prefix(self, pod) -> str:
        try:
            return self.replica_of(pod)
        except Exception:  # noqa: BLE001 - a pod we cannot place is still worth reading
            return pod.metadata.name

    def _pump(self, pod: str, prefix: str) -> None:
        try:
            stream = self.core.read_namespaced_pod_log(
                pod, self.namespace, container=self.container, follow=True,
                _preload_content=False)
            for raw in stream.stream():
                if self.stopped.is_set():
                    break
                for line in raw.decode("utf-8", "replace").splitlines():
                    self.lines.append(f"[{prefix}] {line}")
                    print(f"[{prefix}] {line}", flush=True)
        except Exception as err:  # noqa: BLE001 - logs are best effort
            log.debug("log stream of pod %s ended: %s", pod, err)

    def tail(self) -> str:
        if not self.lines:
            return ""
        return "; the replicas' last log lines:\n" + indented(self.lines)

    def stop(self) -> None:
        self.stopped.set()
