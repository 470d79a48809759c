"""The tfjob launcher: the cluster shape as a Kubeflow Training Operator TFJob, created with the
``kubernetes`` client. It follows the job's status and its pods' logs, fails with the job's
reason when the job fails or outlives its deadline, and deletes the job when the step is
cancelled (SIGTERM) or stopped."""

import collections
import logging
import os
import threading
import time
import uuid
from typing import Any, Deque, Dict

from tfkfp.components.train.errors import TFJobFailed, TFJobReportedFailure
from tfkfp.components.train.launchers import TAIL_LINES, indented, sigterm_raises
from tfkfp.components.train.launchers.job import JobPlan, LaunchOptions, worker_command
from tfkfp.components.train.shape import ClusterShape

log = logging.getLogger("tfkfp")

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"
REPLICA_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS"}
JOB_LABEL = "training.kubeflow.org/job-name"  # the operator labels the job's pods with it
DEFAULT_NAMESPACE = "tfkfp"
DEFAULT_SERVICE_ACCOUNT = "tfkfp-runner"  # manifests/base/serviceaccount.yaml
POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
# The operator enforces activeDeadlineSeconds; this launcher gives it that much longer to say
# so before deleting the job itself.
DEADLINE_GRACE_SECONDS = 60




def manifest(shape: ClusterShape, job: JobPlan, options: LaunchOptions, name: str,
             namespace: str) -> Dict[str, Any]:
    """The TFJob: one replica spec per role of the shape, each running the worker command.

    ``restartPolicy: ExitCode`` restarts a replica that was killed (exit code 128 and above:
    preemption, eviction, OOM kill) and fails the job on a user error (exit 1-127); restarted
    replicas resume from the job's checkpoints."""
    labels = {"app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "train"}
    replica_specs = {
        REPLICA_TYPES[role]: {"replicas": count, "restartPolicy": "ExitCode",
                              "template": _pod_template(role, job, options, labels)}
        for role, count in shape.replicas.items()}
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "runPolicy": {"activeDeadlineSeconds": options.deadline_seconds,
                          "backoffLimit": options.backoff_limit,
                          "cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 86400},
            "tfReplicaSpecs": replica_specs}}


def _pod_template(role: str, job: JobPlan, options: LaunchOptions,
                  labels: Dict[str, str]) -> Dict[str, Any]:
    resources = {"requests": {"cpu": options.cpu, "memory": options.memory},
                 "limits": {"memory": options.memory}}
    if options.gpus and role != "ps":
        resources["limits"]["nvidia.com/gpu"] = options.gpus
    container = {
        "name": "tensorflow",  # the container name the operator expects
        "image": options.image,
        "command": worker_command(job),
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
    }
    spec = {"serviceAccountName": options.service_account or DEFAULT_SERVICE_ACCOUNT,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                "fsGroup": 1000},
            "containers": [container]}
    if options.volume_claim:
        container["volumeMounts"] = [{"name": "shared", "mountPath": options.mount_path}]
        spec["volumes"] = [{"name": "shared", "persistentVolumeClaim": {
            "claimName": options.volume_claim}}]
    return {"metadata": {"labels": labels}, "spec": spec}


def default_namespace() -> str:
    """The namespace this pod runs in, else tfkfp (manifests/base)."""
    try:
        with open(POD_NAMESPACE_FILE) as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def api_client():
    """In a pod, its service account; elsewhere the kubeconfig (KUBECONFIG or ~/.kube)."""
    from kubernetes import client, config

    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
    else:
        # Read KUBECONFIG now: the client reads it once, when it is first imported.
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return client.ApiClient()


def run(shape: ClusterShape, job: JobPlan, options: LaunchOptions, api=None) -> None:
    """Create the TFJob and return when it succeeds; raise TFJobFailed when it fails or
    passes its deadline. The job is deleted if this returns by any exception but a failure
    the operator reported (that job stays, for ``kubectl describe``, until its TTL)."""
    from kubernetes import client

    api = api or api_client()
    jobs = client.CustomObjectsApi(api)
    namespace = options.namespace or default_namespace()
    name = options.job_name or f"tfkfp-train-{uuid.uuid4().hex[:8]}"
    body = manifest(shape, job, options, name, namespace)
    logs = _PodLogs(client.CoreV1Api(api), namespace, name)
    with sigterm_raises():  # before creating, so a cancel never leaves the job behind
        try:
            _create(jobs, body, shape)  # a failed create must not delete a namesake
            try:
                _follow(jobs, namespace, name, options, logs)
            except TFJobReportedFailure:
                raise  # kept for inspection
            except BaseException:  # deadline, cancel, lost API: nothing may keep running
                _delete(jobs, namespace, name)
                raise
        finally:
            logs.stop()


def _create(jobs, body: Dict[str, Any], shape: ClusterShape) -> None:
    from kubernetes import client

    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        jobs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    except client.ApiException as err:
        raise TFJobFailed(f"could not create TFJob {namespace}/{name}: {err.status} "
                          f"{err.reason}: {_api_message(err)}. Is the Kubeflow Training "
                          "Operator installed (kubectl get crd tfjobs.kubeflow.org), and may "
                          "this service account create TFJobs?") from err
    log.info("created TFJob %s/%s: %s", namespace, name,
             ", ".join(f"{n} {role}" for role, n in shape.replicas.items()))


def _follow(jobs, namespace: str, name: str, options: LaunchOptions, logs) -> None:
    """Poll the job until it succeeds; raise when it fails or outlives its deadline."""
    give_up = time.monotonic() + options.deadline_seconds + DEADLINE_GRACE_SECONDS
    seen = None
    while True:
        status = jobs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL,
                                                   name).get("status") or {}
        condition = _latest_condition(status)
        if condition and condition["type"] != seen:
            seen = condition["type"]
            log.info("TFJob %s/%s: %s %s", namespace, name, seen,
                     condition.get("message", ""))
        logs.follow_new_pods()
        if seen == "Succeeded":
            return
        if seen == "Failed":
            reason = condition.get("reason") or "Failed"
            raise TFJobReportedFailure(f"TFJob {namespace}/{name} failed: {reason}: "
                              f"{condition.get('message', '')}{logs.tail()}")
        if time.monotonic() > give_up:
            raise TFJobFailed(
                f"TFJob {namespace}/{name} passed its deadline of {options.deadline_seconds} s "
                f"(launcher_options deadline_seconds) without finishing; deleted it"
                f"{logs.tail()}")
        time.sleep(options.poll_seconds)


def _latest_condition(status: Dict[str, Any]) -> Dict[str, Any] | None:
    """The newest true condition (Created, Running, Restarting, Succeeded, Failed)."""
    true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
    ended = [c for c in true if c.get("type") in ("Succeeded", "Failed")]
    return (ended or true or [None])[-1]


def _delete(jobs, namespace: str, name: str) -> None:
    from kubernetes import client

    try:
        # Background: the API removes the job now and the garbage collector its pods.
        jobs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                             propagation_policy="Background")
        log.info("deleted TFJob %s/%s", namespace, name)
    except client.ApiException as err:
        if err.status != 404:
            log.warning("could not delete TFJob %s/%s: %s", namespace, name, err.reason)


def _api_message(err) -> str:
    import json

    try:
        return json.loads(err.body).get("message", "")
    except (TypeError, ValueError, AttributeError):
        return str(err.body or "")


class _PodLogs:
    """Streams the job's pods' logs, each line prefixed with its replica, and keeps a tail for
    error messages. Log streaming is best effort: it never fails the step."""

    def __init__(self, core, namespace: str, job_name: str):
        self.core, self.namespace, self.job_name = core, namespace, job_name
        self.followed: set = set()
        self.lines: Deque[str] = collections.deque(maxlen=TAIL_LINES)  # all pods' threads
        self.stopped = threading.Event()

    def follow_new_pods(self) -> None:
        try:
            pods = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"{JOB_LABEL}={self.job_name}").items
        except Exception as err:  # noqa: BLE001 - logs are best effort
            log.debug("cannot list the TFJob's pods: %s", err)
            return
        for pod in pods:
            key = (pod.metadata.name, pod.metadata.uid)
            if key in self.followed or pod.status.phase not in ("Running", "Succeeded",
                                                                "Failed"):
                continue
            self.followed.add(key)
            labels = pod.metadata.labels or {}
            prefix = "{}-{}".format(labels.get("training.kubeflow.org/replica-type", "pod"),
                                    labels.get("training.kubeflow.org/replica-index", "?"))
            threading.Thread(target=self._pump, args=(pod.metadata.name, prefix),
                             daemon=True).start()

    def _pump(self, pod: str, prefix: str) -> None:
        try:
            stream = self.core.read_namespaced_pod_log(
                pod, self.namespace, container="tensorflow", follow=True,
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
