"""The katib engine: create the Experiment, follow it, fetch the best trial's model.

Before anything is written it checks, in seconds, that a cluster answers, that Katib's
Experiment resource exists there, and that the namespace lets Katib inject its metrics
collector (``katib.kubeflow.org/metrics-collector-injection: enabled``); without that label
trials run but report nothing. The experiment is followed as the suite's other remote jobs
are (common/platform/follow.py: transient API errors survived); each trial is logged as it
ends. SIGTERM (a cancelled run), a deadline or a lost API deletes the experiment, and Katib's
owner references take its trials with it; a finished or failed experiment stays for Katib's
UI.
"""

import json
import logging
import uuid
from typing import Any, Dict, Tuple

from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.follow import describe_error, follow
from tfkfp.components.common.platform.kube_api import api_message, default_namespace, undoing
from tfkfp.components.common.platform.signals import sigterm_raises
from tfkfp.components.tune import katib_experiment as kx
from tfkfp.components.tune import katib_rules
from tfkfp.components.tune.errors import TrialFailed, TuneError
from tfkfp.components.tune.katib_status import TrialLog, condition, result_of
from tfkfp.components.tune.remote_options import KatibOptions, trial_paths

log = logging.getLogger("tfkfp")
INJECTION_LABEL = "katib.kubeflow.org/metrics-collector-injection"
CHECK_TIMEOUT = (3, 5)  # seconds to connect and to read, for the checks before creating
ENDED = ("Succeeded", "Failed")


def connect():
    """The Kubernetes API client, or a one-line TuneError when there is no cluster config."""
    from kubernetes.config import ConfigException

    from tfkfp.components.common.platform.kube_api import api_client

    try:
        return api_client()
    except (ConfigException, OSError) as err:
        raise TuneError(f"engine 'katib' needs a Kubernetes cluster: no in-cluster service "
                        f"account and no usable kubeconfig ({' '.join(str(err).split())})"
                        ) from None


def check_cluster(api, namespace: str) -> None:
    """Refuse, in seconds, an unreachable API, a cluster without Katib, or a namespace
    without the collector-injection label."""
    from kubernetes import client

    try:
        client.CustomObjectsApi(api).list_namespaced_custom_object(
            kx.GROUP, kx.VERSION, namespace, kx.PLURAL, limit=1,
            _request_timeout=CHECK_TIMEOUT)
    except client.ApiException as err:
        if err.status == 404:
            raise TuneError(f"engine 'katib': the cluster has no Katib Experiment resource "
                            f"({kx.PLURAL}.{kx.GROUP}/{kx.VERSION}); install Katib 0.19 or "
                            "choose engine 'local'") from None
        raise TuneError(f"engine 'katib': cannot list Experiments in namespace {namespace!r}:"
                        f" {err.status} {err.reason}: {api_message(err)}") from None
    except Exception as err:  # noqa: BLE001 - unreachable: one line, not a traceback
        raise TuneError(f"engine 'katib': the Kubernetes API does not answer at "
                        f"{api.configuration.host}: {describe_error(err)}") from None
    _check_label(client, api, namespace)


def _check_label(client, api, namespace: str) -> None:
    try:
        labels = client.CoreV1Api(api).read_namespace(
            namespace, _request_timeout=CHECK_TIMEOUT).metadata.labels or {}
    except client.ApiException as err:
        if err.status != 403:
            raise TuneError(f"engine 'katib': cannot read namespace {namespace!r}: "
                            f"{err.status} {err.reason}") from None
        log.warning("tune: may not read namespace %s to check its label %s=enabled; Katib "
                    "reads no metric from trials without it", namespace, INJECTION_LABEL)
        return
    if labels.get(INJECTION_LABEL) != "enabled":
        raise TuneError(f"engine 'katib': namespace {namespace!r} lacks the label "
                        f"{INJECTION_LABEL}=enabled, so Katib would inject no metrics "
                        f"collector and no trial would report; label it (kubectl label "
                        f"namespace {namespace} {INJECTION_LABEL}=enabled)")


def run(dataset: str, model_dir: str, settings: Dict[str, Any], budget: int,
        parallel_trials: int, options: KatibOptions, api=None):
    """Tune on Katib; a core.TuneResult whose model is the optimal trial's."""
    from kubernetes import client

    paths = trial_paths(dataset, model_dir, options)
    namespace = options.namespace or default_namespace()
    api = api or connect()
    check_cluster(api, namespace)
    name = options.experiment_name or f"tfkfp-tune-{uuid.uuid4().hex[:8]}"
    request_uri = uris.join(paths["trials_dir"], "request.json")
    pod = kx.TrialPod(options.image, options.service_account, options.cpu, options.memory,
                      options.gpus, options.volume_claim, options.mount_path, options.runtime)
    body = kx.experiment(name, namespace, settings, budget, parallel_trials, request_uri,
                         paths["trials_dir"], pod, trial_nodes(settings["fixed"]))
    refused = katib_rules.problems(body)
    if refused:
        raise TuneError("the Katib Experiment would be refused by Katib's webhook: "
                        + "; ".join(refused))
    uris.makedirs(paths["trials_dir"])
    uris.write_text_atomic(request_uri, json.dumps(
        {"dataset": paths["dataset"], "objective": settings["objective"],
         "fixed": settings["fixed"]}))
    objects = client.CustomObjectsApi(api)
    status, resumed = _create_and_follow(objects, body, options, paths["trials_dir"])
    return result_of(status, f"{namespace}/{name}", paths["trials_dir"], model_dir, settings,
                     resumed)


def trial_nodes(fixed: Dict[str, Any]) -> int:
    """Train processes per trial: one, or a node per task of a multi-worker strategy."""
    from tfkfp.components.common.training.request import make_config
    from tfkfp.components.common.training.shape import ClusterShape

    shape = ClusterShape.for_config(make_config("dataset", "model", dict(fixed)))
    return sum(shape.replicas.values()) if shape.multi_process else 1


def _create_and_follow(objects, body: Dict[str, Any], options: KatibOptions,
                       trials_dir: str) -> Tuple[Dict, bool]:
    """The ended experiment's status, and whether an earlier run had created it."""
    from kubernetes import client

    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    resumed = False
    with sigterm_raises("tuning"):  # before creating: a cancel never leaves it behind
        try:
            objects.create_namespaced_custom_object(kx.GROUP, kx.VERSION, namespace,
                                                    kx.PLURAL, body)
            log.info("created Katib Experiment %s/%s: %d trial(s), %d at a time, algorithm "
                     "%s", namespace, name, body["spec"]["maxTrialCount"],
                     body["spec"]["parallelTrialCount"],
                     body["spec"]["algorithm"]["algorithmName"])
        except client.ApiException as err:
            if err.status != 409:
                raise TuneError(f"could not create Katib Experiment {namespace}/{name}: "
                                f"{err.status} {err.reason}: {api_message(err)}") from None
            resumed = _resume(objects, body)
        except BaseException:
            _delete(objects, namespace, name)  # the server may have made it already
            raise
        try:
            return _follow(objects, namespace, name, options, body, trials_dir), resumed
        except TrialFailed:
            raise  # Katib failed it: kept for inspection
        except BaseException:
            _delete(objects, namespace, name)
            raise


def _resume(objects, body: Dict[str, Any]) -> bool:
    """An Experiment of this name exists: a rerun of this step follows it (Katib ran it on
    while the step was gone); another request's is refused, naming it."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    existing = objects.get_namespaced_custom_object(kx.GROUP, kx.VERSION, namespace,
                                                    kx.PLURAL, name)
    if not kx.made_for(existing, body):
        raise TuneError(f"Katib Experiment {namespace}/{name} exists and was not made for "
                        "this request (other settings, space or Dataset); give another "
                        "engine_options experiment_name, or delete it to start over")
    status = existing.get("status") or {}
    log.info("tune: resuming Katib Experiment %s/%s, which an earlier run of this step "
             "created: %d trial(s) so far, %d succeeded", namespace, name,
             status.get("trials", 0), status.get("trialsSucceeded", 0))
    return True


def _follow(objects, namespace: str, name: str, options: KatibOptions, body,
            trials_dir: str) -> Dict:
    trials = TrialLog(body["spec"]["objective"]["objectiveMetricName"], trials_dir)
    what = f"Katib Experiment {namespace}/{name}"

    def observe(status: Dict[str, Any]) -> None:
        trials.log_ended(status)
        ended = condition(status, ENDED)
        if ended and ended["type"] == "Failed":
            raise TrialFailed(f"{what} failed: {ended.get('reason', '')}: "
                              f"{ended.get('message', '')}")

    def expired(status) -> BaseException:
        return TuneError(f"{what} passed its deadline of {options.deadline_seconds} s "
                         "(engine_options deadline_seconds); deleted it")

    return follow(what, lambda: objects.get_namespaced_custom_object(
        kx.GROUP, kx.VERSION, namespace, kx.PLURAL, name).get("status") or {},
        lambda status: bool(condition(status, ENDED)), interval=options.poll_seconds,
        deadline=options.deadline_seconds, observe=observe, expired=expired,
        describe=lambda status: f"{status.get('trials', 0)} trial(s), "
                                f"{status.get('trialsSucceeded', 0)} succeeded")


def _delete(objects, namespace: str, name: str) -> None:
    with undoing(f"delete Katib Experiment {namespace}/{name}", log):
        objects.delete_namespaced_custom_object(kx.GROUP, kx.VERSION, namespace, kx.PLURAL,
                                                name, propagation_policy="Background")
        log.info("deleted Katib Experiment %s/%s and its trials", namespace, name)

