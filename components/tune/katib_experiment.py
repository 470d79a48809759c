"""The Katib Experiment (kubeflow.org/v1beta1) of a tuning request, as plain dicts.

Katib's Python SDK (kubeflow-katib 0.19) pins protobuf below 5, which would downgrade the
suite's protobuf 6 under kfp 2.17, so the body follows Katib's Go types
(pkg/apis/controller/experiments/v1beta1) by hand; katib_rules.py checks it as Katib's
admission webhook would.

Each trial is a batch Job (a Kubeflow Trainer TrainJob for a multi-worker strategy) running
``python -m tfkfp.components.tune.katib_trial`` in the suite's image: it trains with the
trial's settings and prints ``<objective>=<value>`` after every epoch, which Katib's StdOut
collector reads and median-stop compares. Choices made:

- ``resumePolicy: Never``: once the budget is spent nothing keeps the suggestion service
  running (LongRunning would). A rerun of the step with the same ``experiment_name`` (its
  pod lost, say) follows the experiment already there instead of starting over, when the
  ``tfkfp.dev/request`` annotation (a digest of the spec) says it was made for the same
  request; katib_run.py.
- ``trialTemplate.retain: false``: a finished trial's Job and pod go at once; its log and
  model stay under ``<trials_dir>/<trial name>/`` on shared storage.
- ``metricStrategies: latest``: a trial's value is its last epoch's, as in the local engine.
"""

import dataclasses
import hashlib
import json
from typing import Any, Dict, List, Mapping

from tfkfp.components.common.platform import trainer

GROUP, VERSION, PLURAL = "kubeflow.org", "v1beta1", "experiments"
CONTAINER = "training"  # the trial pod's primary container
TRIAL_NAME = "trialName"  # the trial parameter holding ${trialSpec.Name}
TRIAL_PROGRAM = "tfkfp.components.tune.katib_trial"
RESUME_POLICY = "Never"
REQUEST_ANNOTATION = "tfkfp.dev/request"  # the digest of the spec the step sent
RETAIN = False
# Katib's defaults for a batch Job (experiment_defaults.go), set here: the API server has no
# defaulting webhook and a reader should not need one.
JOB_SUCCESS = 'status.conditions.#(type=="Complete")#|#(status=="True")#'
JOB_FAILURE = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
PRUNER_STARTUP_TRIALS = 2  # as the local engine's MedianPruner (study.py)
LABELS = {"app.kubernetes.io/name": "tfkfp", "app.kubernetes.io/component": "tune"}
TRAINER_GROUP, NODE = trainer.GROUP, trainer.NODE  # a TrainJob trial's (Trainer's node)
PATCH_MANAGER = "tfkfp.kubeflow.org/tune"  # owner of a TrainJob trial's runtimePatches entry
# Katib's DefaultTrainJobPrimaryPodLabels: node 0 of the trainer job reports the metrics
PRIMARY_NODE = {"jobset.sigs.k8s.io/replicatedjob-name": NODE,
                "batch.kubernetes.io/job-completion-index": "0"}
SEEDED = ("tpe", "random", "bayesianoptimization")  # take random_state (grid: upstream bug)


@dataclasses.dataclass(frozen=True)
class TrialPod:
    """What each trial's pod runs with: image, account, resources, shared volume."""

    image: str
    service_account: str = ""
    cpu: str = "2"
    memory: str = "8Gi"
    gpus: int = 0
    volume_claim: str = ""
    mount_path: str = "/mnt/tfkfp"
    runtime: str = "tfkfp-tensorflow"  # a TrainJob trial's ClusterTrainingRuntime


def parameters(space: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The search space as Katib ParameterSpecs (every value a string, as Katib keeps it)."""
    out = []
    for name, spec in space.items():
        if spec["type"] == "categorical":
            out.append({"name": name, "parameterType": "categorical",
                        "feasibleSpace": {"list": [str(c) for c in spec["choices"]]}})
            continue
        feasible = {"min": str(spec["low"]), "max": str(spec["high"]),
                    "distribution": "logUniform" if spec["log"] else "uniform"}
        if spec.get("step", 1) != 1:
            feasible["step"] = str(spec["step"])
        out.append({"name": name, "parameterType": "double" if spec["type"] == "float"
                    else "int", "feasibleSpace": feasible})
    return out


def trial_command(request_uri: str, trials_dir: str, names: List[str]) -> List[str]:
    """The trial's command: its folder by trial name, each setting by placeholder."""
    return ["python", "-m", TRIAL_PROGRAM, request_uri,
            f"{trials_dir.rstrip('/')}/${{trialParameters.{TRIAL_NAME}}}",
            *(f"{name}=${{trialParameters.{name}}}" for name in names)]


def trial_job(command: List[str], pod: TrialPod) -> Dict[str, Any]:
    """The batch Job Katib creates per trial (no name or namespace: Katib sets them)."""
    resources: Dict[str, Any] = {"requests": {"cpu": pod.cpu, "memory": pod.memory},
                                 "limits": {"memory": pod.memory}}
    if pod.gpus:
        resources["limits"]["nvidia.com/gpu"] = str(pod.gpus)
    container: Dict[str, Any] = {
        "name": CONTAINER, "image": pod.image, "command": command, "resources": resources,
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}}}
    spec: Dict[str, Any] = {"restartPolicy": "Never", "containers": [container],
                            "automountServiceAccountToken": False}
    if pod.service_account:
        spec["serviceAccountName"] = pod.service_account
    if pod.volume_claim:
        spec["volumes"] = [{"name": "shared", "persistentVolumeClaim": {
            "claimName": pod.volume_claim}}]
        container["volumeMounts"] = [{"name": "shared", "mountPath": pod.mount_path}]
    # Istio's sidecar would keep a finished trial's pod running (Kubeflow injects it).
    metadata = {"labels": dict(LABELS), "annotations": {"sidecar.istio.io/inject": "false"}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "spec": {"backoffLimit": 0, "template": {"metadata": metadata, "spec": spec}}}


def trial_trainjob(command: List[str], pod: TrialPod, nodes: int) -> Dict[str, Any]:
    """A multi-worker trial: a Kubeflow Trainer TrainJob on the suite's TensorFlow runtime
    (manifests/trainer), one node per task of the strategy's cluster; each node finds its
    role from its JobSet identity, as train's trainjob launcher's nodes do."""
    spec = trainer.trainjob_spec(
        pod.runtime, pod.image, command, nodes,
        trainer.node_resources(pod.cpu, pod.memory, pod.gpus),
        trainer.pod_patch(pod.service_account, pod.volume_claim, pod.mount_path),
        PATCH_MANAGER)
    return {"apiVersion": f"{TRAINER_GROUP}/{trainer.VERSION}", "kind": "TrainJob",
            "spec": spec}


def trial_template(command: List[str], pod: TrialPod, nodes: int) -> Dict[str, Any]:
    """The trial spec, container and conditions: a batch Job, or a TrainJob for more nodes
    (Katib's TrainJob defaults: container ``node``, node 0 the primary pod)."""
    if nodes == 1:
        return {"primaryContainerName": CONTAINER, "successCondition": JOB_SUCCESS,
                "failureCondition": JOB_FAILURE, "trialSpec": trial_job(command, pod)}
    return {"primaryContainerName": NODE, "successCondition": JOB_SUCCESS,
            "failureCondition": JOB_FAILURE, "primaryPodLabels": dict(PRIMARY_NODE),
            "trialSpec": trial_trainjob(command, pod, nodes)}


def experiment(name: str, namespace: str, settings: Mapping[str, Any], budget: int,
               parallel_trials: int, request_uri: str, trials_dir: str,
               pod: TrialPod, nodes: int = 1) -> Dict[str, Any]:
    """The Experiment. ``settings``: objective, direction, space, algorithm (Katib's name),
    pruning and seed, as core.py checked them; ``nodes``: train processes per trial."""
    objective, names = settings["objective"], list(settings["space"])
    algorithm: Dict[str, Any] = {"algorithmName": settings["algorithm"]}
    if settings["seed"] and settings["algorithm"] in SEEDED:
        algorithm["algorithmSettings"] = [{"name": "random_state",
                                           "value": str(settings["seed"])}]
    spec: Dict[str, Any] = {
        "objective": {"type": settings["direction"], "objectiveMetricName": objective,
                      "metricStrategies": [{"name": objective, "value": "latest"}]},
        "algorithm": algorithm,
        "parallelTrialCount": min(parallel_trials, budget), "maxTrialCount": budget,
        "maxFailedTrialCount": budget,  # a failed trial does not end the study (as locally)
        "resumePolicy": RESUME_POLICY,
        "metricsCollectorSpec": {"collector": {"kind": "StdOut"}},
        "parameters": parameters(settings["space"]),
        "trialTemplate": {
            "retain": RETAIN,
            "trialParameters": [{"name": TRIAL_NAME, "reference": "${trialSpec.Name}",
                                 "description": "the trial's folder under trials_dir"},
                                *({"name": n, "reference": n} for n in names)],
            **trial_template(trial_command(request_uri, trials_dir, names), pod, nodes)}}
    if settings["pruning"]:
        spec["earlyStopping"] = {"algorithmName": "medianstop", "algorithmSettings": [
            {"name": "min_trials_required", "value": str(PRUNER_STARTUP_TRIALS)},
            {"name": "start_step", "value": "1"}]}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Experiment",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELS),
                         "annotations": {REQUEST_ANNOTATION: digest(spec)}},
            "spec": spec}


def digest(spec: Mapping[str, Any]) -> str:
    """What a rerun compares to tell its own experiment from another request's: Katib's
    webhook fills defaults into the stored spec, so the spec itself would not compare."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def made_for(existing: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether an Experiment already on the cluster was created for ``body``'s request."""
    annotations = (existing.get("metadata") or {}).get("annotations") or {}
    return annotations.get(REQUEST_ANNOTATION) == body["metadata"]["annotations"][
        REQUEST_ANNOTATION]
