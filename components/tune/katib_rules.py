"""The checks Katib 0.19's admission webhook makes of an Experiment, in Python.

Katib's CRD schema preserves unknown fields, so the API server accepts any body; the rules
live in pkg/webhook/v1beta1/experiment/validator/validator.go and the suggestion and
early-stopping services' own setting checks. The step checks its body with them before
creating it, so a mistake is named here rather than as a webhook refusal on the cluster.
Only the rules for what this suite sends are kept (no NAS, no ConfigMap template, StdOut
collector only). ``problems`` returns every broken rule, as the webhook lists them.
"""

import json
import re
from typing import Any, Dict, List

# katib-config.yaml (manifests/v1beta1/installs/katib-standalone), tag v0.19.0
SUGGESTIONS = ("random", "tpe", "grid", "hyperband", "bayesianoptimization", "cmaes",
               "sobol", "multivariate-tpe", "enas", "darts", "pbt")
EARLY_STOPPING = {"medianstop": {"min_trials_required": 1, "start_step": 1}}  # setting: min
RESUME_POLICIES = ("", "Never", "LongRunning", "FromVolume")
PARAMETER_TYPES = ("int", "double", "categorical", "discrete", "unknown")
DISTRIBUTIONS = ("uniform", "logUniform", "normal", "logNormal", "unknown")
COLLECTORS = ("StdOut", "File", "TensorFlowEvent", "PrometheusMetric", "Custom", "None")
META_KEYS = ("Name", "Namespace", "Kind", "APIVersion", "Annotations", "Labels")
NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?")  # as the webhook writes it: unanchored end
PLACEHOLDER = re.compile(r"\$\{trialParameters\..+?\}")
META = re.compile(r"\$\{trialSpec\.(.+?)\}")
TWO_GROUPS = re.compile(r".*\(.*\).*\(.*\).*")


def problems(body: Dict[str, Any]) -> List[str]:
    """What Katib's webhook would refuse in ``body``, one message per broken rule."""
    spec = body.get("spec") or {}
    found: List[str] = []
    name = body.get("metadata", {}).get("name", "")
    if not NAME.match(name) or len(name) > 40:
        found.append(f"metadata.name {name!r}: lower-case letters, digits and '-', starting "
                     "with a letter, at most 40 characters")
    found += _counts(spec) + _objective(spec.get("objective"))
    found += _algorithms(spec) + _parameters(spec.get("parameters") or [])
    found += _trial_template(spec) + _collector(spec.get("metricsCollectorSpec") or {})
    return found


def _counts(spec: Dict[str, Any]) -> List[str]:
    found = []
    most, parallel = spec.get("maxTrialCount"), spec.get("parallelTrialCount")
    failed = spec.get("maxFailedTrialCount")
    if most is not None and most <= 0:
        found.append("spec.maxTrialCount must be greater than 0")
    if parallel is not None and (parallel <= 0 or (most is not None and parallel > most)):
        found.append("spec.parallelTrialCount must be above 0 and at most maxTrialCount")
    if failed is not None and (failed < 0 or (most is not None and failed > most)):
        found.append("spec.maxFailedTrialCount must be 0 to maxTrialCount")
    if spec.get("resumePolicy", "") not in RESUME_POLICIES:
        found.append(f"spec.resumePolicy {spec['resumePolicy']!r}: invalid ResumePolicyType")
    return found


def _objective(objective: Dict[str, Any] | None) -> List[str]:
    if not objective:
        return ["spec.objective must be specified"]
    found = []
    if objective.get("type") not in ("minimize", "maximize"):
        found.append(f"spec.objective.type {objective.get('type')!r}: minimize or maximize")
    if not objective.get("objectiveMetricName"):
        found.append("spec.objective.objectiveMetricName must be specified")
    if objective.get("objectiveMetricName") in (objective.get("additionalMetricNames") or []):
        found.append("spec.objective.additionalMetricNames repeats the objective")
    return found


def _algorithms(spec: Dict[str, Any]) -> List[str]:
    found = []
    name = (spec.get("algorithm") or {}).get("algorithmName", "")
    if name not in SUGGESTIONS:
        found.append(f"spec.algorithm.algorithmName {name!r} is not in katib-config "
                     f"({', '.join(SUGGESTIONS)})")
    stopping = spec.get("earlyStopping")
    if stopping is not None:
        limits = EARLY_STOPPING.get(stopping.get("algorithmName", ""))
        if limits is None:
            found.append(f"spec.earlyStopping.algorithmName {stopping.get('algorithmName')!r}"
                         f" is not in katib-config ({', '.join(EARLY_STOPPING)})")
            return found
        for setting in stopping.get("algorithmSettings") or []:
            least = limits.get(setting.get("name"))
            if least is None or not str(setting.get("value", "")).isdigit() \
                    or int(setting["value"]) < least:
                found.append(f"spec.earlyStopping setting {setting!r}: one of "
                             f"{', '.join(limits)}, a whole number at least its minimum")
    return found


def _parameters(parameters: List[Dict[str, Any]]) -> List[str]:
    if not parameters:
        return ["spec.parameters must be specified"]
    found = []
    for i, param in enumerate(parameters):
        where, kind = f"spec.parameters[{i}] ({param.get('name')})", param.get("parameterType")
        space = param.get("feasibleSpace") or {}
        if kind not in PARAMETER_TYPES:
            found.append(f"{where}: parameterType {kind!r} is not supported")
        if space.get("distribution", "") not in ("", *DISTRIBUTIONS):
            found.append(f"{where}: distribution {space['distribution']!r} is not supported")
        if not space:
            found.append(f"{where}: feasibleSpace must be specified")
        elif kind in ("double", "int") and (space.get("list") or not space.get("min")
                                            or not space.get("max")):
            found.append(f"{where}: a {kind} needs min and max and no list")
        elif kind in ("categorical", "discrete") and any(space.get(k) for k in
                                                          ("min", "max", "step")):
            found.append(f"{where}: a {kind} takes a list, not min, max or step")
    return found


def _trial_template(spec: Dict[str, Any]) -> List[str]:
    template = spec.get("trialTemplate")
    if not template:
        return ["spec.trialTemplate must be specified"]
    found = []
    if not template.get("primaryContainerName"):
        found.append("spec.trialTemplate.primaryContainerName must be specified")
    if not (template.get("successCondition") and template.get("failureCondition")):
        found.append("spec.trialTemplate: successCondition and failureCondition must be "
                     "specified")
    if template.get("trialParameters") is None or not template.get("trialSpec"):
        return found + ["spec.trialTemplate: trialParameters and trialSpec must be specified"]
    found += _placeholders(template, {p.get("name") for p in spec.get("parameters") or []})
    trial = template["trialSpec"]
    if trial.get("metadata", {}).get("name") or trial.get("metadata", {}).get("namespace"):
        found.append("spec.trialTemplate: metadata.name and metadata.namespace must be omitted")
    if not (trial.get("apiVersion") and trial.get("kind")):
        found.append("spec.trialTemplate: apiVersion and kind must be specified")
    return found + _primary_container(template)


def _placeholders(template: Dict[str, Any], parameters: set) -> List[str]:
    """Each trial parameter named once, referring to a parameter or trial metadata, and
    used in the trial spec; every placeholder there declared."""
    text, found, names, refs = json.dumps(template["trialSpec"]), [], set(), set()
    for i, param in enumerate(template["trialParameters"]):
        name, ref = param.get("name", ""), param.get("reference", "")
        where = f"spec.trialTemplate.trialParameters[{i}]"
        if not name or not ref or "{" in name or "}" in name:
            found.append(f"{where}: name and reference must be set; no braces in the name")
            continue
        if name in names or ref in refs:
            found.append(f"{where}: name {name!r} or reference {ref!r} is repeated")
            continue
        names.add(name), refs.add(ref)
        if parameters and not _is_meta(ref) and ref not in parameters:
            found.append(f"{where}: reference {ref!r} is not in spec.parameters")
        placeholder = f"${{trialParameters.{name}}}"
        if placeholder not in text:
            found.append(f"{where}: {placeholder} is not used in spec.trialTemplate.trialSpec")
            return found
        text = text.replace(placeholder, "test-value")
    left = PLACEHOLDER.findall(text)
    if left:
        found.append(f"spec.trialTemplate.trialSpec: {left} are not in trialParameters")
    return found


def _is_meta(reference: str) -> bool:
    match = META.search(reference)
    if not match:
        return False
    key = match.group(1)
    inner = re.match(r"(.+)\[(.+)]", key)
    return key in META_KEYS or bool(inner and inner.group(1) in META_KEYS)


def _primary_container(template: Dict[str, Any]) -> List[str]:
    """Not a webhook rule but the pod webhook's need: the collector is injected beside the
    container named primaryContainerName, so a batch Job must have one by that name."""
    trial = template["trialSpec"]
    if trial.get("kind") != "Job":
        return []
    pod = trial.get("spec", {}).get("template", {}).get("spec", {})
    names = [c.get("name") for c in pod.get("containers") or []]
    if template.get("primaryContainerName") not in names:
        return [f"spec.trialTemplate.primaryContainerName "
                f"{template.get('primaryContainerName')!r} is none of the Job's containers "
                f"{names}"]
    return []


def _collector(collector_spec: Dict[str, Any]) -> List[str]:
    kind = (collector_spec.get("collector") or {}).get("kind", "StdOut")
    found = [] if kind in COLLECTORS else [f"metricsCollectorSpec kind {kind!r} is invalid"]
    filters = ((collector_spec.get("source") or {}).get("filter") or {})
    for fmt in filters.get("metricsFormat") or []:
        try:
            re.compile(fmt)
        except re.error as err:
            found.append(f"metricsCollectorSpec filter {fmt!r}: {err}")
            continue
        if not TWO_GROUPS.match(fmt):
            found.append(f"metricsCollectorSpec filter {fmt!r}: two subexpressions needed")
    return found
